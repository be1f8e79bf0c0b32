/**
 * The attributes a registry policy can read on `Server::"<name>"`, each checked through the real
 * Cedar engine with a policy that depends on it alone.
 */
import {test} from 'node:test'
import assert from 'node:assert/strict'
import {validateAuthzConfig} from '../../../src/lib/authz/policy-file.ts'
import {RegistryPolicy} from '../../../src/lib/registry-authz/registry-policy.ts'
import {OFFICIAL_META_KEY, type ServerEntry} from '../../../src/lib/registry/types.ts'

function entry(server: Record<string, unknown>, status = 'active', isLatest = true): ServerEntry {
  return {
    server: {name: 'io.example/weather', version: '1.2.0', ...server},
    _meta: {
      [OFFICIAL_META_KEY]: {
        status: status as 'active',
        publishedAt: '2025-01-01T00:00:00Z',
        updatedAt: '2025-01-01T00:00:00Z',
        isLatest,
      },
    },
  }
}

function allows(condition: string, e: ServerEntry, registry = 'default'): boolean {
  const policy = new RegistryPolicy(
    validateAuthzConfig({
      version: '1.0',
      type: 'cedarv1',
      cedar: {
        policies: [
          `permit(principal, action == Action::"get_server", resource) when { ${condition} };`,
        ],
      },
    }),
  )
  return policy
    .viewer(undefined)
    .allows('get_server', registry, e.server.name, e.server.version, () => e)
}

const cases: [string, string, ServerEntry, ServerEntry][] = [
  [
    'namespace',
    'resource.namespace == "io.example"',
    entry({}),
    entry({name: 'com.other/weather'}),
  ],
  ['name', 'resource.name == "io.example/weather"', entry({}), entry({name: 'io.example/other'})],
  ['version', 'resource.version == "1.2.0"', entry({}), entry({version: '2.0.0'})],
  ['status', 'resource.status == "active"', entry({}), entry({}, 'deprecated')],
  ['isLatest', 'resource.isLatest', entry({}), entry({}, 'active', false)],
  [
    'remote',
    'resource.remote',
    entry({remotes: [{type: 'streamable-http', url: 'https://x'}]}),
    entry({remotes: []}),
  ],
  [
    'packageTypes',
    'resource.packageTypes.contains("npm")',
    entry({packages: [{registryType: 'oci'}, {registryType: 'npm'}]}),
    entry({packages: [{registryType: 'pypi'}]}),
  ],
  [
    'meta (nested, official block left out)',
    'resource.meta["io.modelcontextprotocol.registry/publisher-provided"].tags.contains("internal")',
    entry({
      _meta: {'io.modelcontextprotocol.registry/publisher-provided': {tags: ['internal', 'x']}},
    }),
    entry({_meta: {'io.modelcontextprotocol.registry/publisher-provided': {tags: ['x']}}}),
  ],
  [
    'no official block in meta',
    `!(resource.meta has "${OFFICIAL_META_KEY}")`,
    entry({_meta: {[OFFICIAL_META_KEY]: {status: 'active'}}}),
    entry({_meta: {[OFFICIAL_META_KEY]: {status: 'active'}}}),
  ],
]

for (const [attribute, condition, yes, no] of cases) {
  test(`resource.${attribute}`, () => {
    assert.equal(allows(condition, yes), true)
    if (attribute !== 'no official block in meta') assert.equal(allows(condition, no), false)
  })
}

test('resource.registry and the Registry parent restrict a registry as a whole', () => {
  assert.equal(allows('resource.registry == "public"', entry({}), 'public'), true)
  assert.equal(allows('resource.registry == "public"', entry({}), 'default'), false)
  assert.equal(allows('resource in Registry::"public"', entry({}), 'public'), true)
  assert.equal(allows('resource in Registry::"public"', entry({}), 'default'), false)
})

test('an attribute read without `has` on an entry lacking it denies (an evaluation error)', () => {
  assert.equal(allows('resource.meta.team == "a"', entry({})), false)
  assert.equal(allows('resource.meta.team == "a"', entry({_meta: {team: 'a'}})), true)
})
