import {test, describe, after} from 'node:test'
import assert from 'node:assert/strict'
import {isToolgateError} from '../../../src/lib/errors.ts'
import {PostgresRegistryStore} from '../../../src/lib/registry/postgres-store.ts'
import {SqliteRegistryStore} from '../../../src/lib/registry/sqlite-store.ts'
import type {ServerJson} from '../../../src/lib/registry/types.ts'
import {freePort, postgresMissing} from '../../helpers/postgres.ts'
import {pgCluster, pgDatabase, stopStoreBackends} from '../../helpers/store-backends.ts'
import {refuseStagedName} from '../../helpers/refuse-staged.ts'
import {startTcpRelay} from '../../helpers/tcp-relay.ts'

/**
 * What only the PostgreSQL store has: migrations shared by replicas, the trigram index behind
 * search (with answers equal to SQLite's), sync leases, and the unavailable database.
 */
after(() => stopStoreBackends())
const T0 = new Date('2025-01-01T00:00:00.000Z')
const REGISTRIES = [{name: 'default', sources: ['a']}]

const open = async (
  url: string,
  extra: Partial<ConstructorParameters<typeof PostgresRegistryStore>[0]> = {},
) => {
  const store = new PostgresRegistryStore({connection: {url}, ...extra})
  await store.init()
  return store
}

/**
 * A fresh database reached through a TCP relay that can fall silent, and connection settings that
 * give a 3 s deadline (connect 1 s + statement 1 s + 1 s) on one pooled connection.
 */
async function relayedDatabase() {
  const url = new URL(await pgDatabase())
  const relay = await startTcpRelay(Number(url.port))
  url.port = String(relay.port)
  const connection = {url: url.href, poolSize: 1, connectTimeoutMs: 1000, statementTimeoutMs: 1000}
  return {url: url.href, relay, connection}
}

describe('PostgresRegistryStore', {skip: postgresMissing}, () => {
  test('replicas starting together run each migration once', async () => {
    const url = await pgDatabase()
    const stores = await Promise.all(Array.from({length: 4}, () => open(url)))
    try {
      for (const s of stores) assert.deepEqual(await s.schemaVersions(), [1, 2, 3])
      const cluster = await pgCluster()
      const db = new URL(url).pathname.slice(1)
      assert.equal((await cluster.psql('SELECT count(*) FROM schema_migrations', db)).trim(), '3')
    } finally {
      await Promise.all(stores.map((s) => s.close()))
    }
  })

  test('a COPY the server refuses after its end fails the sync instead of hanging it', async () => {
    // A row trigger on every new `staging` table (added by an event trigger) refuses one record
    // while the server processes the COPY: as a statement_timeout or a cancelled backend would.
    // postgres.js never settles the COPY stream then (porsager/postgres#1173).
    const url = await pgDatabase()
    const cluster = await pgCluster()
    const db = new URL(url).pathname.slice(1)
    await refuseStagedName(cluster, db, 'io.x/refused')
    const store = await open(url)
    try {
      await store.setRegistries(REGISTRIES)
      await store.replaceSource('a', [{name: 'io.x/kept', version: '1.0.0'}], T0)
      const refused = store.replaceSource(
        'a',
        [
          {name: 'io.x/kept', version: '1.0.0'},
          {name: 'io.x/refused', version: '1.0.0'},
        ],
        T0,
      )
      await assert.rejects(refused, (err: unknown) => {
        assert.ok(isToolgateError(err) && err.code === 'ERR_STORAGE', String(err))
        assert.match(err.message, /refused the staged records/)
        return true
      })
      const page = await store.listServers('default', {limit: 10})
      assert.deepEqual(
        page.servers.map((e) => e.server.name),
        ['io.x/kept'],
      )
      // The connection is not left in a broken state: the next sync goes through.
      const stats = await store.replaceSource(
        'a',
        [
          {name: 'io.x/kept', version: '1.0.0'},
          {name: 'io.x/new', version: '1.0.0'},
        ],
        T0,
      )
      assert.equal(stats.added, 1)
    } finally {
      await store.close()
    }
  })

  // updateLatest's statements are prepared on the connection and outlive the temporary tables
  // they read (dropped at each commit): with one pooled connection every sync reuses them.
  test('syncs on one pooled connection reuse its prepared statements over new temporary tables', async () => {
    const url = await pgDatabase()
    const store = await open(url, {connection: {url, poolSize: 1}})
    try {
      await store.setRegistries(REGISTRIES)
      const names = Array.from({length: 1_200}, (_, i) => `io.p/s-${String(i).padStart(4, '0')}`)
      // Every sync changes every name (a version added or removed): two isLatest batches each.
      const rounds: Array<[string[], string]> = [
        [['1.0.0'], '1.0.0'],
        [['1.0.0', '2.0.0'], '2.0.0'],
        [['1.0.0', '2.0.0', '3.0.0'], '3.0.0'],
        [['1.0.0', '2.0.0'], '2.0.0'],
      ]
      for (const [round, [versions, latest]] of rounds.entries()) {
        await store.replaceSource(
          'a',
          names.flatMap((name) => versions.map((version) => ({name, version}))),
          new Date(T0.getTime() + round * 60_000),
        )
        for (const n of [names[0]!, names[1_100]!])
          assert.equal((await store.getVersion('default', n, 'latest'))?.server.version, latest, n)
      }
    } finally {
      await store.close()
    }
  })

  test('search answers exactly as the SQLite store (instr semantics), with the trigram index', async () => {
    const servers: ServerJson[] = []
    const words = [
      'Weather',
      'wEATher_tools',
      '100%_sure',
      'a_b',
      'back\\slash',
      'ünïcode Straße',
      'ab',
    ]
    for (let i = 0; i < 300; i++) {
      const w = words[i % words.length]!
      servers.push({name: `io.s${i % 37}/srv-${i}`, version: `1.0.${i}`, description: `${w} ${i}`})
    }
    const pg = await open(await pgDatabase())
    const lite = new SqliteRegistryStore({path: ':memory:'})
    await lite.init()
    try {
      for (const s of [pg, lite]) {
        await s.setRegistries(REGISTRIES)
        await s.replaceSource('a', servers, T0)
      }
      const terms = [
        'weather',
        'WEATHER_',
        '%',
        '_',
        '0%_',
        'a_b',
        '\\',
        'h\\s',
        'straße',
        'ü',
        'ab',
        'b',
        '1',
        'srv-29',
        'zzz',
        'io.s3/',
      ]
      for (const search of terms) {
        for (const version of [undefined, 'latest']) {
          let cursor: string | undefined
          do {
            const q = {limit: 7, search, ...(version ? {version} : {}), ...(cursor ? {cursor} : {})}
            const a = await pg.listServersText('default', q)
            const b = await lite.listServersText('default', q)
            assert.deepEqual(a, b, `search=${search} version=${version}`)
            cursor = a.nextCursor
          } while (cursor)
        }
      }
      const plan = await pg.explain('default', {limit: 30, search: 'weather'})
      assert.match(plan, /(on|using) registry_entries_\w+/)
      assert.doesNotMatch(plan, /Seq Scan on registry_entries/)
    } finally {
      await pg.close()
      await lite.close()
    }
  })

  test('one replica wins a sync lease; the other sees it busy, then fresh after the commit', async () => {
    const url = await pgDatabase()
    const a = await open(url, {holder: 'replica-a'})
    const b = await open(url, {holder: 'replica-b'})
    try {
      await a.setRegistries(REGISTRIES)
      const won = await a.claimSync('a', 60_000, false)
      assert.equal(won.kind, 'claimed')
      assert.deepEqual(await b.claimSync('a', 60_000, false), {kind: 'busy', holder: 'replica-a'})
      if (won.kind !== 'claimed') return
      await a.replaceSource('a', [{name: 'io.x/a', version: '1.0.0'}], T0, {lease: won.lease})
      const after = await b.claimSync('a', 60_000, false)
      assert.equal(after.kind, 'fresh')
      assert.equal((await b.syncStatus())[0]?.syncs, 1)
    } finally {
      await a.close()
      await b.close()
    }
  })

  test('an expired lease is taken over, and the late holder cannot commit (fencing)', async () => {
    const url = await pgDatabase()
    const slow = await open(url, {holder: 'slow', syncLeaseMs: 1000})
    const fast = await open(url, {holder: 'fast', syncLeaseMs: 1000})
    try {
      await slow.setRegistries(REGISTRIES)
      await fast.setRegistries(REGISTRIES)
      const first = await slow.claimSync('a', 60_000, false)
      assert.equal(first.kind, 'claimed')
      await new Promise((r) => setTimeout(r, 1300))
      const second = await fast.claimSync('a', 60_000, false)
      assert.equal(second.kind, 'claimed')
      if (first.kind !== 'claimed' || second.kind !== 'claimed') return
      await assert.rejects(
        slow.replaceSource('a', [{name: 'io.x/late', version: '1.0.0'}], T0, {lease: first.lease}),
        (err) => isToolgateError(err, 'ERR_STORAGE') && /lease/.test(err.message),
      )
      assert.equal(await slow.renewSync('a', first.lease), false)
      await fast.replaceSource('a', [{name: 'io.x/new', version: '1.0.0'}], T0, {
        lease: second.lease,
      })
      assert.deepEqual(
        (await fast.listServers('default', {limit: 10})).servers.map((e) => e.server.name),
        ['io.x/new'],
        'nothing of the fenced-off sync was committed',
      )
    } finally {
      await slow.close()
      await fast.close()
    }
  })

  test('a claim past the deadline that commits late is claimed again by the same replica, its token fenced', async () => {
    // The network holds the claim's bytes past the store's deadline (1 + 1 + 1 s) and then
    // delivers them: the database records a lease this replica never heard of.
    const {url, relay, connection} = await relayedDatabase()
    const a = await open(url, {holder: 'replica-a', connection, pollMs: 3_600_000})
    const b = await open(url, {holder: 'replica-b', pollMs: 3_600_000})
    try {
      await a.setRegistries(REGISTRIES)
      relay.hold()
      await assert.rejects(a.claimSync('a', 60_000, false), (err) => {
        assert.ok(isToolgateError(err, 'ERR_STORAGE_UNAVAILABLE'))
        assert.match(err.message, /did not answer within 3000 ms/)
        return true
      })
      relay.release()
      // The lost claim commits: replica-a holds a live lease it does not know. Watched through
      // the read-only status: a claim by replica-b meanwhile could win the race against it.
      const holder = async () => (await b.syncStatus()).find((r) => r.source === 'a')?.holder
      for (let n = 0; n < 100 && (await holder()) !== 'replica-a'; n++)
        await new Promise((r) => setTimeout(r, 100))
      assert.deepEqual(await b.claimSync('a', 60_000, false), {kind: 'busy', holder: 'replica-a'})
      // Not busy for replica-a itself: it claims again, with a new token, without waiting 60 s.
      const again = await a.claimSync('a', 60_000, false)
      assert.equal(again.kind, 'claimed')
      if (again.kind !== 'claimed') return
      assert.deepEqual(await b.claimSync('a', 60_000, false), {kind: 'busy', holder: 'replica-a'})
      const lost = {holder: 'replica-a', token: again.lease.token - 1}
      assert.equal(await a.renewSync('a', lost), false, 'the lost token is fenced out')
      await a.replaceSource('a', [{name: 'io.x/a', version: '1.0.0'}], T0, {lease: again.lease})
      assert.equal((await b.claimSync('a', 60_000, false)).kind, 'fresh')
    } finally {
      await a.close()
      await b.close()
      await relay.close()
    }
  })

  test('a call abandoned at its deadline leaves no unhandled rejection, also when the database then refuses', async (t) => {
    // postgres 3.4's query.cancel() drops the promise of its cancel connection: cancelling at the
    // deadline made a refused cancel an unhandled rejection, which ends a Node 24 process.
    const unhandled: unknown[] = []
    const record = (err: unknown) => unhandled.push(err)
    process.on('unhandledRejection', record)
    t.after(() => process.off('unhandledRejection', record))
    const {url, relay, connection} = await relayedDatabase()
    const store = await open(url, {connection, pollMs: 3_600_000})
    try {
      await store.setRegistries(REGISTRIES)
      assert.equal((await store.listServers('default', {limit: 1})).servers.length, 0)
      relay.silence()
      relay.refuseNew()
      const started = performance.now()
      await Promise.all([
        assert.rejects(store.listServers('default', {limit: 2}), (err) =>
          isToolgateError(err, 'ERR_STORAGE_UNAVAILABLE'),
        ),
        assert.rejects(store.ping(), (err) => isToolgateError(err, 'ERR_STORAGE_UNAVAILABLE')),
      ])
      assert.ok(performance.now() - started >= 3000, 'the deadline, not a refusal, answered')
      await new Promise((r) => setTimeout(r, 1500))
      assert.deepEqual(unhandled, [])
      assert.equal(
        store.poolUse().inFlight,
        2,
        'abandoned calls hold their connection until they end',
      )
    } finally {
      await relay.close()
      await store.close()
    }
    assert.deepEqual(unhandled, [])
  })

  test('an unreachable database is ERR_STORAGE_UNAVAILABLE, with no connection string in the message', async () => {
    const port = await freePort()
    const store = new PostgresRegistryStore({
      connection: {url: `postgres://u@127.0.0.1:${port}/db`, connectTimeoutMs: 2000},
      env: {TOOLGATE_DB_PASSWORD: 'sekret-pw'},
    })
    try {
      await assert.rejects(store.init(), (err) => {
        assert.ok(isToolgateError(err, 'ERR_STORAGE_UNAVAILABLE'))
        assert.doesNotMatch(err.message, /sekret|postgres:\/\//)
        return true
      })
    } finally {
      await store.close()
    }
  })
})
