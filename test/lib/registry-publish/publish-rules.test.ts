/**
 * The rules of publishing that need no server: the schema check (every problem by JSON pointer),
 * which permits grant a write (only those that name the action), and which version a managed
 * source marks latest (deleted versions step aside).
 */
import {test} from 'node:test'
import assert from 'node:assert/strict'
import {policyToJson} from '../../../src/lib/authz/cedar-engine.ts'
import {namesAction} from '../../../src/lib/authz/policy-analysis.ts'
import {checkServerJson} from '../../../src/lib/registry-publish/validate.ts'
import {matchWritePath} from '../../../src/lib/registry-publish/paths.ts'
import {ManagedLoader} from '../../../src/lib/registry/sources/managed-source.ts'
import {SqliteRegistryStore} from '../../../src/lib/registry/sqlite-store.ts'

const ok = {name: 'io.example/weather', description: 'Weather', version: '1.0.0'}

test('a minimal server.json passes; each problem is named by its JSON pointer', () => {
  assert.deepEqual(checkServerJson(ok), [])
  const cases: [unknown, string, RegExp][] = [
    [[], '', /must be object/],
    [{...ok, description: undefined}, '/description', /is required/],
    [{...ok, description: 'x'.repeat(101)}, '/description', /must NOT have more than 100/],
    [{...ok, name: 'noslash'}, '/name', /must match/],
    [{...ok, name: 'a/b/c'}, '/name', /must match/],
    [{...ok, name: '-io.x/a'}, '/name', /namespace/],
    [{...ok, version: 'latest'}, '/version', /exact version/],
    [{...ok, version: '>=1.0.0'}, '/version', /exact version/],
    [{...ok, version: '1.x'}, '/version', /exact version/],
    [{...ok, version: '*'}, '/version', /exact version/],
    [{...ok, websiteUrl: 'not a url'}, '/websiteUrl', /format "uri"/],
    [{...ok, repository: {url: 'https://github.com/x/y'}}, '/repository/source', /is required/],
    [
      {
        ...ok,
        packages: [{registryType: 'npm', identifier: 'x', transport: {type: 'carrier-pigeon'}}],
      },
      '/packages/0/transport/type',
      /must be one of stdio, streamable-http, sse/,
    ],
    [
      {
        ...ok,
        packages: [{registryType: 'npm', identifier: 'x', transport: {type: 'streamable-http'}}],
      },
      '/packages/0/transport/url',
      /is required/,
    ],
    [{...ok, remotes: [{type: 'stdio', url: 'https://x'}]}, '/remotes/0/type', /must be one of/],
    [
      {
        ...ok,
        packages: [
          {registryType: 'npm', identifier: 'x', transport: {type: 'stdio'}, fileSha256: 'abc'},
        ],
      },
      '/packages/0/fileSha256',
      /must match/,
    ],
    [{...ok, _meta: []}, '/_meta', /must be object/],
  ]
  for (const [doc, pointer, message] of cases) {
    const problems = checkServerJson(doc)
    const hit = problems.find((p) => p.pointer === pointer)
    assert.ok(
      hit,
      `${JSON.stringify(doc).slice(0, 120)}: expected ${pointer}, got ${JSON.stringify(problems)}`,
    )
    assert.match(hit.message, message)
  }
  // A missing property is named where it is missing.
  assert.ok(
    checkServerJson({...ok, remotes: [{url: 'https://x'}]}).some(
      (p) => p.pointer === '/remotes/0/type',
    ),
  )
})

test('only permits that name a write action grant it', () => {
  const grants = (text: string, action: string) => namesAction(policyToJson(text), action)
  assert.equal(grants('permit(principal, action == Action::"publish", resource);', 'publish'), true)
  assert.equal(
    grants(
      'permit(principal, action in [Action::"get_server", Action::"publish"], resource);',
      'publish',
    ),
    true,
  )
  assert.equal(grants('permit(principal, action, resource);', 'publish'), false)
  assert.equal(
    grants('permit(principal, action == Action::"publish", resource);', 'set_status'),
    false,
  )
  assert.equal(
    grants('permit(principal, action in Action::"writers", resource);', 'publish'),
    false,
  )
  assert.equal(grants('permit(principal, action == Action::"publish", resource);', 'publish'), true)
})

test('write paths: publish and status; "latest" cannot have its status changed', () => {
  assert.deepEqual(matchWritePath('/registry/default/v0.1/publish'), {
    kind: 'publish',
    registry: 'default',
  })
  assert.deepEqual(
    matchWritePath('/registry/default/v0.1/servers/io.x%2Fa/versions/1.0.0/status'),
    {
      kind: 'set_status',
      registry: 'default',
      serverName: 'io.x/a',
      version: '1.0.0',
    },
  )
  assert.equal(matchWritePath('/registry/a/b/v0.1/publish'), undefined)
  assert.equal(matchWritePath('/registry/default/v0.1/servers'), undefined)
  assert.equal(matchWritePath('/registry/default/v0.1/servers/io.x%2Fa/versions/1.0.0'), undefined)
  assert.throws(
    () => matchWritePath('/registry/default/v0.1/servers/io.x%2Fa/versions/latest/status'),
    /version: name an exact version/,
  )
  assert.throws(
    () => matchWritePath('/registry/default/v0.1/servers/bad/versions/1.0.0/status'),
    /serverName/,
  )
})

test('a managed source marks one latest per name, passing over deleted versions', async () => {
  const store = new SqliteRegistryStore({path: ':memory:'})
  await store.init()
  const at = new Date('2026-01-01T00:00:00Z')
  const put = (name: string, version: string) =>
    store.publishVersion(
      'team',
      {name, version, serverJson: JSON.stringify({name, version}), publishedBy: 'x'},
      at,
    )
  assert.equal(await put('io.x/a', '1.0.0'), 'created')
  assert.equal(await put('io.x/a', '2.0.0'), 'created')
  assert.equal(await put('io.x/a', '2.0.0'), 'exists')
  assert.equal(await put('io.x/b', '1.0.0'), 'created')
  assert.equal(await store.setPublishedStatus('team', 'io.x/a', '2.0.0', 'deleted', at), true)
  assert.equal(await store.setPublishedStatus('team', 'io.x/a', '9.0.0', 'deleted', at), false)
  assert.equal(await store.setPublishedStatus('team', 'io.x/b', '1.0.0', 'deleted', at), true)
  const loaded = await new ManagedLoader('team', store).load()
  assert.equal(loaded.trustOfficialMeta, true)
  const flags = [...loaded.records].map((r) => {
    const o = (r._meta as Record<string, {isLatest: boolean; status: string}>)[
      'io.modelcontextprotocol.registry/official'
    ]!
    return `${r.name}@${r.version} ${o.status} ${o.isLatest}`
  })
  assert.deepEqual(flags, [
    'io.x/a@1.0.0 active true',
    'io.x/a@2.0.0 deleted false',
    // Every version deleted: the latest of them all still answers `latest`, saying it is deleted.
    'io.x/b@1.0.0 deleted true',
  ])
  await store.close()
})

test('a status change on a version the caller cannot see is "not found", on one it can see "forbidden"', async () => {
  const {SourceSyncer} = await import('../../../src/lib/registry/sources/syncer.ts')
  const {Publisher} = await import('../../../src/lib/registry-publish/publisher.ts')
  const {RegistryPolicy} = await import('../../../src/lib/registry-authz/registry-policy.ts')
  const {parseAuthzConfigText} = await import('../../../src/lib/authz/policy-file.ts')
  const store = new SqliteRegistryStore({path: ':memory:'})
  await store.init()
  await store.setRegistries([{name: 'default', sources: ['team']}])
  const syncer = new SourceSyncer({store, sources: [{kind: 'managed', name: 'team'}], watch: false})
  await syncer.start()
  const policy = new RegistryPolicy(
    parseAuthzConfigText(
      JSON.stringify({
        version: '1.0',
        type: 'cedarv1',
        cedar: {
          policies: [
            'permit(principal in ToolgateGroup::"admin", action in [Action::"list_servers", Action::"get_server", Action::"publish", Action::"set_status"], resource);',
            'permit(principal, action in [Action::"list_servers", Action::"get_server"], resource) when { resource.namespace == "io.open" };',
          ],
        },
      }),
    ),
  )
  const publisher = new Publisher({
    store,
    managedSourceOf: () => 'team',
    sync: async (s) => void (await syncer.syncNow(s)),
    policy: () => policy,
  })
  const admin = {provider: 'op', subject: 'root', claims: {groups: ['admin']}}
  const eve = {provider: 'op', subject: 'eve', claims: {groups: []}}
  for (const name of ['io.secret/x', 'io.open/y'])
    await publisher.publish('default', {name, description: 'd', version: '1.0.0'}, admin, {
      action: 'publish',
    })
  const attempt = (name: string) =>
    publisher.setStatus('default', name, '1.0.0', {status: 'deleted'}, eve, {action: 'set_status'})
  await assert.rejects(
    attempt('io.secret/x'),
    (err: Error & {code?: string}) => err.code === 'ERR_NOT_FOUND',
  )
  await assert.rejects(
    attempt('io.open/y'),
    (err: Error & {code?: string}) => err.code === 'ERR_FORBIDDEN',
  )
  await syncer.stop()
  await store.close()
})
