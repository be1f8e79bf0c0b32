/**
 * examples/teams.yaml and examples/teams-policy.yaml: the configuration is valid, and over the
 * example registry each team sees what the comments in the policy promise.
 */
import {after, before, test} from 'node:test'
import assert from 'node:assert/strict'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {loadServeConfig} from '../../src/lib/config/serve-config.ts'
import {parseAuthzConfigText} from '../../src/lib/authz/policy-file.ts'
import {answerRegistryRoute} from '../../src/lib/registry-api/handler.ts'
import {RegistryPolicy} from '../../src/lib/registry-authz/registry-policy.ts'
import {SqliteRegistryStore} from '../../src/lib/registry/sqlite-store.ts'
import type {ServerEntry, ServerJson} from '../../src/lib/registry/types.ts'

const EXAMPLES = fileURLToPath(new URL('../../examples/', import.meta.url))
let store: SqliteRegistryStore
let policy: RegistryPolicy

before(async () => {
  store = new SqliteRegistryStore({path: ':memory:'})
  await store.init()
  await store.setRegistries([{name: 'default', sources: ['examples']}])
  const file = JSON.parse(readFileSync(join(EXAMPLES, 'registry.json'), 'utf8')) as {
    data: {servers: ServerJson[]}
  }
  await store.replaceSource('examples', file.data.servers, new Date())
  const path = join(EXAMPLES, 'teams-policy.yaml')
  policy = new RegistryPolicy(parseAuthzConfigText(readFileSync(path, 'utf8'), path))
})
after(() => store?.close())

async function namespaces(claims: Record<string, unknown> | undefined): Promise<string[]> {
  const viewer = policy.viewer(claims && {provider: 'p', subject: 's', claims})
  const body = JSON.parse(
    await answerRegistryRoute(
      store,
      {kind: 'list_servers', registry: 'default'},
      'limit=100&version=latest',
      viewer,
    ),
  ) as {servers: ServerEntry[]}
  return [...new Set(body.servers.map((e) => e.server.name.split('/')[0] as string))].sort()
}

test('examples/teams.yaml is a valid configuration naming the example policy', () => {
  const config = loadServeConfig(join(EXAMPLES, 'teams.yaml'), {defaultDbPath: '/tmp/unused.db'})
  assert.deepEqual(config.authz, {kind: 'file', path: join(EXAMPLES, 'teams-policy.yaml')})
})

test('each team sees its namespaces and the public examples; admins see everything', async () => {
  const shared = 'io.modelcontextprotocol.examples'
  assert.deepEqual(await namespaces({groups: ['team-data']}), [
    'com.vectorhouse',
    'io.github.datawise',
    'io.github.pydata',
    shared,
  ])
  assert.deepEqual(await namespaces({groups: ['team-platform']}), [
    'com.logstream',
    'io.github.k8s-friends',
    'io.github.terraformers',
    shared,
  ])
  assert.deepEqual(await namespaces(undefined), [shared])
  assert.ok((await namespaces({roles: ['registry-admin']})).length > 30)
})
