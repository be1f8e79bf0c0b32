import {test, describe, before, after} from 'node:test'
import assert from 'node:assert/strict'
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {DatabaseSync} from 'node:sqlite'
import {SqliteRegistryStore} from '../../../src/lib/registry/sqlite-store.ts'
import {isToolgateError} from '../../../src/lib/errors.ts'
import {
  describeEachBackend,
  pgDatabase,
  stopStoreBackends,
  type TestStore,
} from '../../helpers/store-backends.ts'
import {postgresMissing} from '../../helpers/postgres.ts'
import {PostgresRegistryStore} from '../../../src/lib/registry/postgres-store.ts'
import {
  OFFICIAL_META_KEY,
  type ListQuery,
  type ServerJson,
} from '../../../src/lib/registry/types.ts'

/**
 * The text read paths (listServersText, listVersionsText, getVersionText) must be byte-identical to
 * JSON.stringify of the object paths, whatever the stored documents hold.
 */
const T0 = new Date('2025-01-01T00:00:00.000Z')
const T1 = new Date('2025-02-01T00:00:00.000Z')

// Documents chosen to break a naive text assembly: escapes, non-ASCII, lone surrogates, integer-like
// keys (which JSON.stringify orders first), `__proto__` as data, odd numbers, other _meta keys.
function tricky(): ServerJson[] {
  const base = (name: string, version: string, extra: Record<string, unknown> = {}) =>
    ({name, version, description: `The ${name} server`, ...extra}) as ServerJson
  return [
    base('io.a/plain', '1.0.0'),
    base('io.a/plain', '1.1.0', {title: 'Plain "quoted" \\ back\nslash\ttab'}),
    base('io.a/plain', '2.0.0-rc.1'),
    base('io.b/unicode', '1.0.0', {title: 'Wetter ☀ 天気 🌦', description: 'U+2028:\u2028 end'}),
    base('io.b/unicode', '1.0.1', {description: 'lone \ud800 surrogate and \u0001 control'}),
    base('io.c/keys', '0.1.0', {
      repository: {b: 1, 10: 'ten', a: [1, 2.5, 1e21, -0, 0.1, null, true], 2: {z: {}}},
    }),
    JSON.parse(
      '{"name":"io.c/proto","version":"1.0.0","__proto__":{"polluted":true},"packages":[]}',
    ) as ServerJson,
    base('io.d/meta', '1.0.0', {
      _meta: {[OFFICIAL_META_KEY]: {status: 'deprecated'}, 'com.example/extra': {k: 'v'}},
    }),
    base('io.d/meta', '1.2.0', {_meta: {[OFFICIAL_META_KEY]: {isLatest: false}}}),
    base('io.e/dates', '2024-06'),
    base('io.e/dates', '2024-07'),
  ]
}

after(() => stopStoreBackends())
const REGISTRIES = [{name: 'default', sources: ['a', 'up']}]

describeEachBackend('registry store text reads', (backend) => {
  let store: TestStore
  before(async () => {
    store = await backend.open(REGISTRIES)
    await store.replaceSource('a', tricky(), T0)
    // Trusted upstream metadata (api sources): status, dates and isLatest come from the record.
    await store.replaceSource(
      'up',
      [
        {
          name: 'io.f/upstream',
          version: '3.0.0',
          _meta: {
            [OFFICIAL_META_KEY]: {
              status: 'deprecated',
              publishedAt: '2024-01-02T03:04:05Z',
              updatedAt: '2024-02-03T04:05:06.789+01:00',
              isLatest: true,
            },
          },
        },
      ],
      T0,
      {trustOfficialMeta: true},
    )
    // A second sync moves updatedAt for a changed document only.
    const next = tricky()
    next[0] = {...next[0], description: 'changed'} as ServerJson
    await store.replaceSource('a', next, T1)
  })
  after(() => store.close())

  const queries: [string, Omit<ListQuery, 'cursor'>][] = [
    ['all, limit 100', {limit: 100}],
    ['limit 1', {limit: 1}],
    ['limit 3', {limit: 3}],
    ['version=latest', {limit: 2, version: 'latest'}],
    ['exact version', {limit: 100, version: '1.0.0'}],
    ['search (case-insensitive)', {limit: 2, search: 'WETTER'}],
    ['search matching nothing', {limit: 10, search: 'no such thing'}],
    ['updated_since', {limit: 5, updatedSince: new Date('2025-01-15T00:00:00Z')}],
    ['every filter', {limit: 1, version: 'latest', search: 'io.', updatedSince: new Date(0)}],
  ]
  for (const [label, q] of queries) {
    test(`listServersText equals JSON.stringify of listServers, page by page: ${label}`, async () => {
      let cursor: string | undefined
      let pages = 0
      do {
        const query = {...q, ...(cursor ? {cursor} : {})}
        const objects = await store.listServers('default', query)
        const texts = await store.listServersText('default', query)
        assert.deepEqual(
          texts.servers,
          objects.servers.map((e) => JSON.stringify(e)),
        )
        assert.equal(texts.nextCursor, objects.nextCursor)
        assert.equal('nextCursor' in texts, objects.nextCursor !== undefined)
        cursor = objects.nextCursor
        assert.ok(++pages < 100, 'pagination terminates')
      } while (cursor)
    })
  }

  test('every entry text parses back to the object path entry', async () => {
    const texts = await store.listServersText('default', {limit: 100})
    const objects = await store.listServers('default', {limit: 100})
    assert.equal(texts.servers.length, 12)
    assert.deepEqual(
      texts.servers.map((t) => JSON.parse(t) as unknown),
      JSON.parse(JSON.stringify(objects.servers)) as unknown,
    )
  })

  test('listVersionsText and getVersionText equal the object paths (latest included)', async () => {
    for (const name of [
      'io.a/plain',
      'io.b/unicode',
      'io.c/keys',
      'io.c/proto',
      'io.d/meta',
      'io.f/upstream',
    ]) {
      const objects = await store.listVersions('default', name)
      assert.ok(objects, name)
      assert.deepEqual(
        await store.listVersionsText('default', name),
        objects.map((e) => JSON.stringify(e)),
      )
      for (const version of [...objects.map((e) => e.server.version), 'latest']) {
        const entry = await store.getVersion('default', name, version)
        assert.ok(entry, `${name}@${version}`)
        assert.equal(await store.getVersionText('default', name, version), JSON.stringify(entry))
      }
    }
  })

  test('unknown server or version is undefined; unknown registry and bad cursor are errors', async () => {
    assert.equal(await store.listVersionsText('default', 'io.none/x'), undefined)
    assert.equal(await store.getVersionText('default', 'io.none/x', 'latest'), undefined)
    assert.equal(await store.getVersionText('default', 'io.a/plain', '9.9.9'), undefined)
    await assert.rejects(store.listServersText('nope', {limit: 1}), (e) =>
      isToolgateError(e, 'ERR_REGISTRY_NOT_FOUND'),
    )
    await assert.rejects(store.listVersionsText('nope', 'io.a/plain'), (e) =>
      isToolgateError(e, 'ERR_REGISTRY_NOT_FOUND'),
    )
    await assert.rejects(store.getVersionText('nope', 'io.a/plain', '1.0.0'), (e) =>
      isToolgateError(e, 'ERR_REGISTRY_NOT_FOUND'),
    )
    await assert.rejects(store.listServersText('default', {limit: 1, cursor: 'abc'}), (e) =>
      isToolgateError(e, 'ERR_BAD_PARAMETER'),
    )
  })
})

describeEachBackend('registry store dataVersion', (backend) => {
  test('stays put across reads and moves with every write transaction', async () => {
    const store = await backend.open(REGISTRIES)
    try {
      const v0 = store.dataVersion()
      await store.listServersText('default', {limit: 10})
      await store.getVersionText('default', 'io.a/plain', 'latest')
      assert.equal(store.dataVersion(), v0)
      await store.replaceSource('a', tricky(), T0)
      const v1 = store.dataVersion()
      assert.notEqual(v1, v0)
      await store.setRegistries([{name: 'other', sources: ['a']}])
      assert.notEqual(store.dataVersion(), v1)
    } finally {
      await store.close()
    }
  })
})

describe('SqliteRegistryStore dataVersion across connections', () => {
  test('moves when another connection commits to the same file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolgate-dv-'))
    const path = join(dir, 'registry.db')
    const reader = new SqliteRegistryStore({path})
    const writer = new SqliteRegistryStore({path})
    try {
      await reader.init()
      await writer.init()
      await writer.setRegistries([{name: 'default', sources: ['a']}])
      const before = reader.dataVersion()
      assert.equal(reader.dataVersion(), before)
      await writer.replaceSource('a', tricky(), T0)
      assert.notEqual(reader.dataVersion(), before)
    } finally {
      await reader.close()
      await writer.close()
      await rm(dir, {recursive: true, force: true})
    }
  })
})

describe('SqliteRegistryStore dataVersion within one event-loop turn', () => {
  test("reads other connections' commits once per turn, and sees one from the next turn on", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolgate-dv-turn-'))
    const path = join(dir, 'registry.db')
    const store = new SqliteRegistryStore({path})
    try {
      await store.init()
      const other = new DatabaseSync(path)
      const before = store.dataVersion()
      // A commit by another connection in the middle of a turn (synchronous, like a request
      // handler running while another process commits).
      other.exec('CREATE TABLE another_process (x); INSERT INTO another_process VALUES (1)')
      other.close()
      assert.equal(store.dataVersion(), before, 'the same turn keeps the version it read')
      await new Promise((resolve) => setImmediate(resolve))
      assert.notEqual(store.dataVersion(), before, 'the next turn sees the commit')
    } finally {
      await store.close()
      await rm(dir, {recursive: true, force: true})
    }
  })
})

describe('PostgresRegistryStore dataVersion across replicas', {skip: postgresMissing}, () => {
  test('moves when another replica commits (NOTIFY), and stays put otherwise', async () => {
    const url = await pgDatabase()
    const reader = new PostgresRegistryStore({connection: {url}, pollMs: 60_000})
    const writer = new PostgresRegistryStore({connection: {url}, pollMs: 60_000})
    try {
      await writer.init()
      await reader.init()
      await writer.setRegistries([{name: 'default', sources: ['a']}])
      await reader.setRegistries([{name: 'default', sources: ['a']}])
      const before = reader.dataVersion()
      await writer.replaceSource('a', tricky(), T0)
      // The notification arrives asynchronously; the poll is a minute away, so this is NOTIFY.
      for (let i = 0; i < 200 && reader.dataVersion() === before; i++)
        await new Promise((r) => setTimeout(r, 25))
      assert.notEqual(reader.dataVersion(), before)
      const moved = reader.dataVersion()
      // A sync that changes nothing commits no new generation.
      await writer.replaceSource('a', tricky(), T1)
      await reader.ping()
      await new Promise((r) => setTimeout(r, 200))
      assert.equal(reader.dataVersion(), moved)
    } finally {
      await reader.close()
      await writer.close()
    }
  })
})
