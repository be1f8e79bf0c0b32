import {test} from 'node:test'
import assert from 'node:assert/strict'
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {
  answerRegistryRoute,
  createRegistryResponder,
} from '../../../src/lib/registry-api/handler.ts'
import type {RegistryRoute} from '../../../src/lib/registry-api/paths.ts'
import {SqliteRegistryStore} from '../../../src/lib/registry/sqlite-store.ts'
import {isToolgateError} from '../../../src/lib/errors.ts'
import type {RegistryStore, ServerJson} from '../../../src/lib/registry/types.ts'

const T0 = new Date('2025-01-01T00:00:00.000Z')
const T1 = new Date('2025-02-01T00:00:00.000Z')
const LIST: RegistryRoute = {kind: 'list_servers', registry: 'default'}
const VERSIONS: RegistryRoute = {kind: 'list_versions', registry: 'default', serverName: 'io.a/one'}
const LATEST: RegistryRoute = {
  kind: 'get_version',
  registry: 'default',
  serverName: 'io.a/one',
  version: 'latest',
}

const servers = (description: string): ServerJson[] =>
  ['io.a/one', 'io.a/two', 'io.b/three'].flatMap((name) =>
    ['1.0.0', '1.1.0'].map((version) => ({name, version, description: `${description} ☀`})),
  )

async function openStore(path = ':memory:') {
  const store = new SqliteRegistryStore({path})
  await store.init()
  await store.setRegistries([{name: 'default', sources: ['a']}])
  return store
}

/** The same store seen through the RegistryStore interface only: no text reads, no dataVersion. */
function objectsOnly(store: SqliteRegistryStore): RegistryStore {
  return {
    init: () => store.init(),
    close: () => store.close(),
    ping: () => store.ping(),
    setRegistries: (r) => store.setRegistries(r),
    hasRegistry: (n) => store.hasRegistry(n),
    replaceSource: (s, x, now, o) => store.replaceSource(s, x, now, o),
    listServers: (r, q) => store.listServers(r, q),
    listVersions: (r, n) => store.listVersions(r, n),
    getVersion: (r, n, v) => store.getVersion(r, n, v),
    countVersions: () => store.countVersions(),
    publishVersion: (s, v, now) => store.publishVersion(s, v, now),
    setPublishedStatus: (s, n, v, st, now) => store.setPublishedStatus(s, n, v, st, now),
    publishedVersions: (s) => store.publishedVersions(s),
  }
}

const cases: [RegistryRoute, string][] = [
  [LIST, ''],
  [LIST, 'limit=2'],
  [LIST, 'limit=1&version=latest&search=one'],
  [VERSIONS, ''],
  [LATEST, ''],
  [{...LATEST, version: '1.0.0'}, ''],
]

test('the text read paths give the same bytes as the object paths on every route', async (t) => {
  const store = await openStore()
  t.after(() => store.close())
  await store.replaceSource('a', servers('first'), T0)
  const plain = objectsOnly(store)
  for (const [route, q] of cases) {
    const expected = await answerRegistryRoute(plain, route, q)
    assert.equal(await answerRegistryRoute(store, route, q), expected, `${route.kind} ${q}`)
    const responder = createRegistryResponder(store)
    for (let i = 0; i < 2; i++) {
      assert.equal((await responder(route, q)).toString('utf8'), expected, `cached ${route.kind}`)
    }
  }
})

test('a cached body is never served after the data changed (same store)', async (t) => {
  const store = await openStore()
  t.after(() => store.close())
  await store.replaceSource('a', servers('first'), T0)
  const answer = createRegistryResponder(store)
  for (const [route, q] of cases) assert.match((await answer(route, q)).toString(), /first/)
  await store.replaceSource('a', servers('second'), T1)
  for (const [route, q] of cases) {
    const text = (await answer(route, q)).toString()
    assert.match(text, /second/, `${route.kind} ${q}`)
    assert.doesNotMatch(text, /first/)
  }
})

test('a cached body is never served after another connection changed the file', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'toolgate-cache-'))
  const path = join(dir, 'registry.db')
  const reader = await openStore(path)
  const writer = await openStore(path)
  t.after(async () => {
    await reader.close()
    await writer.close()
    await rm(dir, {recursive: true, force: true})
  })
  await writer.replaceSource('a', servers('first'), T0)
  const answer = createRegistryResponder(reader)
  assert.match((await answer(LIST, 'limit=3')).toString(), /first/)
  assert.match((await answer(LIST, 'limit=3')).toString(), /first/)
  await writer.replaceSource('a', servers('second'), T1)
  assert.match((await answer(LIST, 'limit=3')).toString(), /second/)
})

test('errors are thrown every time, never cached as bodies', async (t) => {
  const store = await openStore()
  t.after(() => store.close())
  await store.replaceSource('a', servers('first'), T0)
  const answer = createRegistryResponder(store)
  for (let i = 0; i < 2; i++) {
    await assert.rejects(answer(LIST, 'limit=0'), (e) => isToolgateError(e, 'ERR_BAD_PARAMETER'))
    await assert.rejects(answer({...LIST, registry: 'nope'}, ''), (e) =>
      isToolgateError(e, 'ERR_REGISTRY_NOT_FOUND'),
    )
    await assert.rejects(answer({...LATEST, serverName: 'io.none/x'}, ''), (e) =>
      isToolgateError(e, 'ERR_NOT_FOUND'),
    )
  }
  // A server that appears later is found at once (a miss was not remembered).
  await store.replaceSource('a', [...servers('first'), {name: 'io.none/x', version: '1.0.0'}], T1)
  assert.match((await answer({...LATEST, serverName: 'io.none/x'}, '')).toString(), /io\.none\/x/)
})

test('with the cache off every request reads the store', async (t) => {
  const store = await openStore()
  t.after(() => store.close())
  await store.replaceSource('a', servers('first'), T0)
  let reads = 0
  const counting = Object.assign(Object.create(store) as SqliteRegistryStore, {
    listServersText: (r: string, q: Parameters<SqliteRegistryStore['listServersText']>[1]) => {
      reads++
      return store.listServersText(r, q)
    },
    dataVersion: () => store.dataVersion(),
    hasRegistry: (n: string) => store.hasRegistry(n),
  })
  const off = createRegistryResponder(counting, {cacheBytes: 0})
  await off(LIST, '')
  await off(LIST, '')
  assert.equal(reads, 2)
  const on = createRegistryResponder(counting)
  await on(LIST, '')
  await on(LIST, '')
  assert.equal(reads, 3)
})

test('concurrent misses of one page are computed once (single flight), later ones hit the cache', async () => {
  const store = await openStore()
  await store.replaceSource('a', servers('x'), T0)
  const calls = new Map<string, number>()
  const counted = new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key) as unknown
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        calls.set(String(key), (calls.get(String(key)) ?? 0) + 1)
        return (value as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  })
  const answer = createRegistryResponder(counted)
  const bodies = await Promise.all(Array.from({length: 20}, () => answer(LIST, 'limit=2')))
  assert.equal(new Set(bodies.map((b) => b.toString('utf8'))).size, 1)
  assert.equal(calls.get('listServersText'), 1)
  await answer(LIST, 'limit=2')
  assert.equal(calls.get('listServersText'), 1)
  await answer(LIST, 'limit=3')
  assert.equal(calls.get('listServersText'), 2)
  await store.close()
})
