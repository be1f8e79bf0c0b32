/**
 * Registry authorization over a real SQLite store and the real Cedar engine: every page walked
 * with cursors shows exactly what the caller may see (the unfiltered walk filtered by the same
 * rule in plain JavaScript), with no duplicates or gaps, at page sizes 1, 7 and 100, for lists
 * with `version=latest`, `search` and `updated_since` too; hidden servers are 404 everywhere.
 */
import {after, before, describe, test} from 'node:test'
import assert from 'node:assert/strict'
import {decodeCursor} from '../../../src/lib/registry/cursor.ts'
import {isToolgateError} from '../../../src/lib/errors.ts'
import {
  answerRegistryRoute,
  createRegistryResponder,
} from '../../../src/lib/registry-api/handler.ts'
import type {RegistryRoute} from '../../../src/lib/registry-api/paths.ts'
import {validateAuthzConfig} from '../../../src/lib/authz/policy-file.ts'
import {
  RegistryPolicy,
  type RegistryViewer,
} from '../../../src/lib/registry-authz/registry-policy.ts'
import {SqliteRegistryStore} from '../../../src/lib/registry/sqlite-store.ts'
import type {RegistryStore, ServerEntry, ServerJson} from '../../../src/lib/registry/types.ts'
import type {Principal} from '../../../src/lib/auth/types.ts'

const LIST: RegistryRoute = {kind: 'list_servers', registry: 'default'}

// team-a and team-b see their namespaces; admin sees all; `_meta.internal` hides a server from
// everyone but admin; anonymous callers see what `_meta.public` marks.
const POLICIES = [
  'permit(principal in ToolgateGroup::"team-a", action, resource is Server) when { resource.namespace == "io.team-a" };',
  'permit(principal in ToolgateGroup::"team-b", action, resource is Server) when { resource.namespace == "io.team-b" };',
  'permit(principal in ToolgateGroup::"admin", action, resource);',
  'permit(principal, action, resource is Server) when { resource.meta has public && resource.meta.public == true };',
  'forbid(principal, action, resource is Server) when { resource.meta has internal && resource.meta.internal == true } unless { principal in ToolgateGroup::"admin" };',
]

interface Caller {
  label: string
  principal: Principal | undefined
  sees: (s: ServerJson) => boolean
}

const meta = (s: ServerJson) => (s._meta ?? {}) as {public?: boolean; internal?: boolean}
const ns = (s: ServerJson) => s.name.split('/')[0]
const callers: Caller[] = [
  {
    label: 'team-a',
    principal: {provider: 'p', subject: 'alice', claims: {sub: 'alice', groups: ['team-a']}},
    sees: (s) => (ns(s) === 'io.team-a' || meta(s).public === true) && meta(s).internal !== true,
  },
  {
    label: 'team-b',
    principal: {provider: 'p', subject: 'bob', claims: {sub: 'bob', groups: ['team-b']}},
    sees: (s) => (ns(s) === 'io.team-b' || meta(s).public === true) && meta(s).internal !== true,
  },
  {
    label: 'admin',
    principal: {provider: 'p', subject: 'root', claims: {sub: 'root', roles: ['admin']}},
    sees: () => true,
  },
  {
    label: 'anonymous',
    principal: undefined,
    sees: (s) => meta(s).public === true && meta(s).internal !== true,
  },
  {
    label: 'nobody',
    principal: {provider: 'p', subject: 'eve', claims: {sub: 'eve', groups: ['guests']}},
    sees: (s) => meta(s).public === true && meta(s).internal !== true,
  },
]

function dataset(): ServerJson[] {
  const out: ServerJson[] = []
  const add = (namespace: string, count: number) => {
    for (let i = 0; i < count; i++) {
      const versions = 1 + (i % 3)
      for (let v = 0; v < versions; v++) {
        const s: ServerJson = {
          name: `${namespace}/srv-${String(i).padStart(3, '0')}`,
          version: `1.${v}.0`,
          description: i % 5 === 0 ? 'Weather tools' : 'Other tools',
        }
        if (i % 11 === 0) s._meta = {public: true}
        if (i % 13 === 5) s._meta = {internal: true}
        out.push(s)
      }
    }
  }
  add('io.team-a', 30)
  add('io.team-b', 25)
  add('io.other', 120)
  return out
}

let store: SqliteRegistryStore
let policy: RegistryPolicy
const T0 = new Date('2025-01-01T00:00:00.000Z')
const T1 = new Date('2025-03-01T00:00:00.000Z')

before(async () => {
  store = new SqliteRegistryStore({path: ':memory:'})
  await store.init()
  await store.setRegistries([{name: 'default', sources: ['a', 'b']}])
  const all = dataset()
  // Source b holds the io.other servers and syncs later: updated_since separates the two.
  await store.replaceSource(
    'a',
    all.filter((s) => !s.name.startsWith('io.other/')),
    T0,
  )
  await store.replaceSource(
    'b',
    all.filter((s) => s.name.startsWith('io.other/')),
    T1,
  )
  policy = new RegistryPolicy(
    validateAuthzConfig({version: '1.0', type: 'cedarv1', cedar: {policies: POLICIES}}),
    {dataVersion: () => store.dataVersion()},
  )
})

after(async () => {
  await store?.close()
})

interface Page {
  servers: ServerEntry[]
  metadata: {count: number; nextCursor?: string}
}

async function walk(
  s: RegistryStore,
  query: string,
  limit: number,
  viewer?: RegistryViewer,
): Promise<{keys: string[]; pages: Page[]}> {
  const keys: string[] = []
  const pages: Page[] = []
  let cursor: string | undefined
  for (let guard = 0; guard < 10_000; guard++) {
    const qs = [query, `limit=${limit}`, cursor ? `cursor=${cursor}` : ''].filter(Boolean).join('&')
    const page = JSON.parse(await answerRegistryRoute(s, LIST, qs, viewer)) as Page
    pages.push(page)
    keys.push(...page.servers.map((e) => `${e.server.name}@${e.server.version}`))
    cursor = page.metadata.nextCursor
    if (!cursor) return {keys, pages}
  }
  throw new Error('pagination did not end')
}

const QUERIES = ['', 'version=latest', 'search=weather', 'updated_since=2025-02-01T00:00:00Z']

describe('lists walked with cursors show exactly the allowed set', () => {
  for (const caller of callers) {
    test(`${caller.label}`, async () => {
      const viewer = policy.viewer(caller.principal)
      for (const query of QUERIES) {
        const everything = await walk(store, query, 100)
        const byKey = new Map<string, ServerJson>()
        for (const p of everything.pages)
          for (const e of p.servers) byKey.set(`${e.server.name}@${e.server.version}`, e.server)
        const expected = everything.keys.filter((k) => caller.sees(byKey.get(k)!))
        for (const limit of [1, 7, 100]) {
          const {keys, pages} = await walk(store, query, limit, viewer)
          const label = `${caller.label} ${query || '(all)'} limit=${limit}`
          assert.deepEqual(keys, expected, label)
          assert.equal(new Set(keys).size, keys.length, `${label}: duplicates`)
          for (const [i, page] of pages.entries()) {
            assert.equal(page.metadata.count, page.servers.length, `${label}: count`)
            if (i < pages.length - 1) {
              assert.equal(page.servers.length, limit, `${label}: page ${i} is not full`)
              // The cursor names the last entry shown, never a hidden one.
              const pos = decodeCursor(page.metadata.nextCursor!)
              const last = page.servers.at(-1)!.server
              assert.deepEqual([pos.name, pos.version], [last.name, last.version], label)
            }
          }
        }
      }
    })
  }
  test('the filter actually hides something for every non-admin caller', async () => {
    const all = (await walk(store, '', 100)).keys.length
    for (const caller of callers.filter((c) => c.label !== 'admin')) {
      const seen = (await walk(store, '', 100, policy.viewer(caller.principal))).keys.length
      assert.ok(seen > 0 && seen < all, `${caller.label} sees ${seen} of ${all}`)
    }
  })
})

describe('a hidden server is 404 like a missing one', () => {
  const hidden = 'io.team-b/srv-001'
  const alice = callers[0]!.principal
  const routes: RegistryRoute[] = [
    {kind: 'list_versions', registry: 'default', serverName: hidden},
    {kind: 'get_version', registry: 'default', serverName: hidden, version: 'latest'},
    {kind: 'get_version', registry: 'default', serverName: hidden, version: '1.0.0'},
  ]
  for (const route of routes) {
    test(`${route.kind} ${'version' in route ? route.version : ''}`, async () => {
      const viewer = policy.viewer(alice)
      await assert.rejects(answerRegistryRoute(store, route, '', viewer), (err: unknown) => {
        assert.ok(isToolgateError(err))
        assert.equal(err.code, 'ERR_NOT_FOUND')
        assert.equal(err.message, 'not found')
        return true
      })
      // The same route answers for a caller allowed to see it.
      const bob = policy.viewer(callers[1]!.principal)
      const body = JSON.parse(await answerRegistryRoute(store, route, '', bob)) as unknown
      assert.ok(body)
    })
  }
  test('versions lists only the visible versions of a server', async () => {
    // io.team-a/srv-005 is internal (5 % 13 === 5): admin sees its versions, team-a none.
    const route: RegistryRoute = {
      kind: 'list_versions',
      registry: 'default',
      serverName: 'io.team-a/srv-005',
    }
    const admin = JSON.parse(
      await answerRegistryRoute(store, route, '', policy.viewer(callers[2]!.principal)),
    ) as Page
    assert.equal(admin.servers.length, 3)
    await assert.rejects(answerRegistryRoute(store, route, '', policy.viewer(alice)))
  })
})

describe('caching', () => {
  test('callers with the same groups share an equivalence class; other groups do not', () => {
    const a1 = policy.viewer({provider: 'p', subject: 'a1', claims: {groups: ['team-a'], exp: 1}})
    const a2 = policy.viewer({provider: 'p', subject: 'a2', claims: {groups: ['team-a'], exp: 2}})
    const b = policy.viewer({provider: 'p', subject: 'b', claims: {groups: ['team-b']}})
    assert.equal(a1.classKey, a2.classKey)
    assert.notEqual(a1.classKey, b.classKey)
  })

  test('a policy that names principals keeps every caller in a class of its own', () => {
    const named = new RegistryPolicy(
      validateAuthzConfig({
        version: '1.0',
        type: 'cedarv1',
        cedar: {policies: ['permit(principal == Client::"a1", action, resource);']},
      }),
    )
    const a1 = named.viewer({provider: 'p', subject: 'a1', claims: {groups: ['team-a']}})
    const a2 = named.viewer({provider: 'p', subject: 'a2', claims: {groups: ['team-a']}})
    assert.notEqual(a1.classKey, a2.classKey)
  })

  test('the response cache never hands one class the page of another', async () => {
    const answer = createRegistryResponder(store)
    const scoped = (c: Caller) => ({
      viewer: policy.viewer(c.principal),
      generation: policy.generation,
    })
    for (let round = 0; round < 2; round++) {
      for (const c of callers) {
        const page = JSON.parse(
          (await answer(LIST, 'limit=100', scoped(c))).toString('utf8'),
        ) as Page
        for (const e of page.servers) assert.ok(c.sees(e.server), `${c.label} round ${round}`)
      }
    }
  })

  test('decisions are dropped when the data changes', async () => {
    const viewer = () => policy.viewer(callers[3]!.principal)
    const route: RegistryRoute = {
      kind: 'get_version',
      registry: 'default',
      serverName: 'io.other/srv-001',
      version: '1.0.0',
    }
    await assert.rejects(answerRegistryRoute(store, route, '', viewer()))
    const others = dataset().filter((s) => s.name.startsWith('io.other/'))
    const target = others.find((s) => s.name === route.serverName && s.version === '1.0.0')!
    target._meta = {public: true}
    await store.replaceSource('b', others, T1)
    const body = JSON.parse(await answerRegistryRoute(store, route, '', viewer())) as ServerEntry
    assert.equal(body.server.name, route.serverName)
    // Restore for other tests.
    delete target._meta
    await store.replaceSource(
      'b',
      dataset().filter((s) => s.name.startsWith('io.other/')),
      T1,
    )
  })
})

test('a caller who sees nothing gets an empty page at once, and a bad cursor is still a 400', async () => {
  const nobody = new RegistryPolicy(
    validateAuthzConfig({
      version: '1.0',
      type: 'cedarv1',
      cedar: {policies: ['permit(principal in ToolgateGroup::"x", action, resource);']},
    }),
  ).viewer(undefined)
  assert.equal(nobody.seesNothing, true)
  const page = JSON.parse(await answerRegistryRoute(store, LIST, 'limit=5', nobody)) as Page
  assert.deepEqual(page, {servers: [], metadata: {count: 0}})
  await assert.rejects(
    answerRegistryRoute(store, LIST, 'cursor=bm9wZQ', nobody),
    (err: unknown) => {
      assert.ok(isToolgateError(err))
      assert.equal(err.code, 'ERR_BAD_PARAMETER')
      return true
    },
  )
})

test('a row removed between the scan and the read (another process synced) is skipped, not a 500', async () => {
  const vanished = 'io.team-a/srv-000@1.0.0'
  const racing = new Proxy(store, {
    get(target, key) {
      if (key === 'scanServers')
        return async (registry: string, query: Parameters<typeof store.scanServers>[1]) => {
          const page = await target.scanServers(registry, query)
          return {
            ...page,
            rows: page.rows.map((r) =>
              `${r.name}@${r.version}` === vanished ? {...r, entry: () => undefined} : r,
            ),
          }
        }
      const value = Reflect.get(target, key) as unknown
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  // A fresh policy: no decision about the row is cached yet, so it must be read.
  const fresh = new RegistryPolicy(
    validateAuthzConfig({version: '1.0', type: 'cedarv1', cedar: {policies: POLICIES}}),
  )
  const {keys} = await walk(racing, '', 7, fresh.viewer(callers[0]!.principal))
  assert.ok(!keys.includes(vanished))
  assert.ok(keys.includes('io.team-a/srv-000@1.0.0'.replace('srv-000', 'srv-001')))
})
