import {test, describe, before, after} from 'node:test'
import assert from 'node:assert/strict'
import {subscribe, unsubscribe} from 'node:diagnostics_channel'
import {appendFileSync, readdirSync, readFileSync, statSync} from 'node:fs'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {PostgresRegistryStore} from '../../../src/lib/registry/postgres-store.ts'
import {WORKER_STAGING_BYTES} from '../../../src/lib/registry/postgres/stage-worker.ts'
import {CHUNK_MAX_CHARS, stagingChunks} from '../../../src/lib/registry/postgres/staging-rows.ts'
import {
  MAX_INVALID_KEPT,
  streamRegistryDocument,
} from '../../../src/lib/registry/sources/document.ts'
import {SqliteRegistryStore} from '../../../src/lib/registry/sqlite-store.ts'
import {SourceSyncer} from '../../../src/lib/registry/sources/syncer.ts'
import {SYNC_PHASE_CHANNEL, type SyncPhaseMessage} from '../../../src/lib/registry/sync-phases.ts'
import type {RegistryStore, SourceConfig} from '../../../src/lib/registry/types.ts'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {postgresMissing} from '../../helpers/postgres.ts'
import {pgCluster, pgDatabase, stopStoreBackends} from '../../helpers/store-backends.ts'
import {refuseStagedName} from '../../helpers/refuse-staged.ts'

/**
 * A large local file's records are prepared for PostgreSQL in a worker thread
 * (src/lib/registry/postgres/stage-worker.ts): the same answers as on the event loop (checked
 * against the SQLite store fed the same file), the same counts of invalid, duplicate and
 * filtered records, and the same failures. Real files, a real database, a real worker.
 */
after(() => stopStoreBackends())
const T0 = new Date('2025-01-01T00:00:00.000Z')

// Over WORKER_STAGING_BYTES: ~1.2 KB per record. Descriptions carry what COPY text must escape
// (tab, newline, backslash), non-ASCII text and a lone surrogate.
function bigRecords(generation: number): unknown[] {
  const pad = 'x'.repeat(1_100)
  const records: unknown[] = []
  for (let i = 0; i < 4_000; i++) {
    const name = `io.big/s-${String(i).padStart(4, '0')}`
    records.push({
      name,
      version: `1.${i % 3}.${generation}`,
      description: `g${generation}\t#${i}\nback\\slash é 𝄞 ${i % 97 === 0 ? '\ud800' : ''}${pad}`,
    })
  }
  records.splice(10, 0, {name: 'not a name', version: '1.0.0'}) // invalid: index 10
  records.splice(20, 0, {...(records[30] as object)}) // a duplicate of a later name+version
  // Nested 5,000 deep (spliced in as text by `wrapper`): refused by checkRecord in every thread.
  records.splice(25, 0, {name: 'io.big/deep', version: '1.0.0', _meta: DEEP})
  records.push({name: 'io.big/internal-x', version: '1.0.0'}) // filtered out
  return records
}

const DEEP = '__deep__'
const wrapper = (servers: unknown[]) =>
  JSON.stringify({
    version: '1',
    meta: {last_updated: '2025-01-01T00:00:00Z'},
    data: {servers},
  }).replace(`"${DEEP}"`, `${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}`)

interface Rig {
  store: RegistryStore & {listServers: SqliteRegistryStore['listServers']}
  syncer: SourceSyncer
  logger: ReturnType<typeof createMemoryLogger>
}

async function rig(
  store: Rig['store'],
  source: SourceConfig,
  cleanup: Array<() => Promise<void>>,
): Promise<Rig> {
  await store.init()
  await store.setRegistries([{name: 'default', sources: [source.name]}])
  const logger = createMemoryLogger()
  const syncer = new SourceSyncer({store, sources: [source], logger, watch: false, now: () => T0})
  cleanup.push(async () => {
    await syncer.stop()
    await store.close()
  })
  return {store, syncer, logger}
}

/** Every entry of the registry, page by page, as `name@version <entry JSON>`. */
async function everything(store: Rig['store']): Promise<string[]> {
  const out: string[] = []
  let cursor: string | undefined
  do {
    const page = await store.listServers('default', {limit: 100, ...(cursor ? {cursor} : {})})
    for (const e of page.servers)
      out.push(`${e.server.name}@${e.server.version} ${JSON.stringify(e)}`)
    cursor = page.nextCursor
  } while (cursor)
  return out
}

/** Thread id → nice value of every thread of this process (Linux; empty elsewhere). */
function threadNices(): Map<number, number> {
  const nices = new Map<number, number>()
  if (process.platform !== 'linux') return nices
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
      // Fields after the command name (which may hold spaces): state is field 3, nice field 19.
      nices.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]))
    } catch {
      // The thread ended meanwhile.
    }
  }
  return nices
}

function recordPhases(source: string): {seen: SyncPhaseMessage[]; stop(): void} {
  const seen: SyncPhaseMessage[] = []
  const listener = (m: unknown) => {
    if ((m as SyncPhaseMessage).source === source) seen.push(m as SyncPhaseMessage)
  }
  subscribe(SYNC_PHASE_CHANNEL, listener)
  return {seen, stop: () => void unsubscribe(SYNC_PHASE_CHANNEL, listener)}
}

describe('PostgreSQL staging in a worker thread', {skip: postgresMissing}, () => {
  let dir: string
  const cleanup: Array<() => Promise<void>> = []
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolgate-stage-worker-'))
  })
  after(async () => {
    for (const c of cleanup) await c()
    await rm(dir, {recursive: true, force: true})
  })

  const source = (path: string): SourceConfig => ({
    name: 'big',
    kind: 'file',
    path,
    filter: {names: {exclude: ['*/internal-*']}},
  })

  test('stages a large file in a worker with the answers and counts of the event loop', async () => {
    const path = join(dir, 'big.json')
    await writeFile(path, wrapper(bigRecords(1)))
    assert.ok(statSync(path).size >= WORKER_STAGING_BYTES, 'the file is large enough')
    const pg = await rig(
      new PostgresRegistryStore({connection: {url: await pgDatabase()}}),
      source(path),
      cleanup,
    )
    const lite = await rig(new SqliteRegistryStore({path: ':memory:'}), source(path), cleanup)
    const phases = recordPhases('big')
    // The worker's thread lowers its own CPU priority (Linux): look at every thread's nice value
    // while the sync runs (the event loop is free meanwhile: the staging is in the worker).
    const base = threadNices().get(process.pid)
    const nices = new Set<number>()
    const look = setInterval(() => {
      for (const [tid, nice] of threadNices()) {
        if (tid !== process.pid) nices.add(nice)
        else assert.equal(nice, base, 'the event loop keeps its priority')
      }
    }, 2)
    try {
      await pg.syncer.start()
    } finally {
      clearInterval(look)
      phases.stop()
    }
    if (process.platform === 'linux') {
      const want = Math.min(19, base! + 3)
      assert.ok(nices.has(want), `worker at nice ${want}? other threads at: ${[...nices]}`)
    }
    assert.deepEqual(
      phases.seen.filter((m) => m.phase === 'staging').map((m) => m.worker),
      [true],
    )
    await lite.syncer.start()
    const [pgStats] = pg.syncer.stats()
    const [liteStats] = lite.syncer.stats()
    assert.equal(pgStats?.versions, 4_000)
    // The invalid record, the deep one and the duplicate; the filtered name is counted apart.
    assert.equal(pgStats?.invalidRecords, 3)
    assert.equal(pgStats?.filteredOut, 1)
    assert.deepEqual(
      [pgStats?.versions, pgStats?.invalidRecords, pgStats?.filteredOut],
      [liteStats?.versions, liteStats?.invalidRecords, liteStats?.filteredOut],
    )
    const warnings = pg.logger.lines.filter((l) => l.includes('registry record skipped'))
    assert.match(warnings[0] ?? '', /index=10 .*field=name/)
    assert.match(warnings[1] ?? '', /index=25 .*field=_meta .*more than 64 deep/)
    const [pgAll, liteAll] = [await everything(pg.store), await everything(lite.store)]
    assert.equal(pgAll.length, 4_000)
    assert.deepEqual(pgAll, liteAll)
    // JSON text keeps a lone surrogate as an escape: its backslash went through COPY's escaping.
    assert.ok(pgAll.some((l) => l.includes('\\ud800')))

    // A re-sync of every version goes the same way, and replaces the data.
    await writeFile(path, wrapper(bigRecords(2)))
    const again = await pg.syncer.syncNow('big')
    assert.equal(again.lastError, undefined)
    await lite.syncer.syncNow('big')
    const after = await everything(pg.store)
    assert.ok(after.every((l) => l.includes('g2')))
    assert.deepEqual(after, await everything(lite.store))
  })

  test('a file of 200,000 invalid records: all counted, ten named, the first hundred kept', async () => {
    const path = join(dir, 'invalid.json')
    const empties = Array.from({length: 200_000}, () => ({}))
    await writeFile(path, wrapper([...bigRecords(1), ...empties]))
    const pg = await rig(
      new PostgresRegistryStore({connection: {url: await pgDatabase()}}),
      source(path),
      cleanup,
    )
    const phases = recordPhases('big')
    try {
      await pg.syncer.start()
    } finally {
      phases.stop()
    }
    assert.deepEqual(
      phases.seen.filter((m) => m.phase === 'staging').map((m) => m.worker),
      [true],
    )
    const [stats] = pg.syncer.stats()
    assert.equal(stats?.versions, 4_000)
    assert.equal(stats?.invalidRecords, 200_003)
    const named = pg.logger.lines.filter((l) => l.includes('registry record skipped'))
    assert.equal(named.length, 10)
    assert.ok(pg.logger.lines.some((l) => /registry records skipped .*count=200003/.test(l)))
  })

  test('a file rewritten between its scan and its staging fails the sync and keeps the last data', async () => {
    const path = join(dir, 'rewritten.json')
    await writeFile(path, wrapper(bigRecords(1)))
    const pg = await rig(
      new PostgresRegistryStore({connection: {url: await pgDatabase()}}),
      source(path),
      cleanup,
    )
    await pg.syncer.start()
    const before = await everything(pg.store)
    await writeFile(path, wrapper(bigRecords(2)))
    // Published on the event loop just before the worker starts reading the file again.
    const grow = (m: unknown) => {
      const msg = m as SyncPhaseMessage
      if (msg.source === 'big' && msg.phase === 'staging') appendFileSync(path, '\n')
    }
    subscribe(SYNC_PHASE_CHANNEL, grow)
    let stats
    try {
      stats = await pg.syncer.syncNow('big')
    } finally {
      unsubscribe(SYNC_PHASE_CHANNEL, grow)
    }
    assert.equal(stats.failures, 1)
    // The worker's ERR_SOURCE_LOAD as such, not re-wrapped as a storage error.
    assert.match(stats.lastError ?? '', /^[^ ]*rewritten\.json: changed while being loaded/)
    assert.deepEqual(await everything(pg.store), before)
    // The next sync of the settled file goes through.
    assert.equal((await pg.syncer.syncNow('big')).lastError, undefined)
    assert.ok((await everything(pg.store)).every((l) => l.includes('g2')))
  })

  test('a COPY the database refuses stops the worker and fails the sync; the next one works', async () => {
    const url = await pgDatabase()
    const cluster = await pgCluster()
    const db = new URL(url).pathname.slice(1)
    const path = join(dir, 'refused.json')
    await writeFile(path, wrapper(bigRecords(1)))
    const pg = await rig(new PostgresRegistryStore({connection: {url}}), source(path), cleanup)
    await pg.syncer.start()
    // From now on every staging table refuses one record of the middle of the file.
    await refuseStagedName(cluster, db, 'io.big/s-2000')
    await writeFile(path, wrapper(bigRecords(2)))
    const threads = threadNices().size
    const failed = await pg.syncer.syncNow('big')
    assert.equal(failed.failures, 1)
    // Refused while the rows stream in (the server's error) or after their end (sync.ts says so).
    assert.match(failed.lastError ?? '', /\(P0001\): refused row|refused the staged records/)
    assert.ok((await everything(pg.store)).every((l) => l.includes('g1')))
    if (process.platform === 'linux') {
      // The worker was stopped: its thread is gone (an OS thread may take a moment to be reaped).
      const deadline = Date.now() + 5_000
      while (threadNices().size > threads && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20))
      assert.ok(threadNices().size <= threads, `threads: ${threadNices().size} > ${threads}`)
    }
    await cluster.psql('DROP EVENT TRIGGER add_refuse', db)
    assert.equal((await pg.syncer.syncNow('big')).lastError, undefined)
    assert.ok((await everything(pg.store)).every((l) => l.includes('g2')))
  })
})

describe('staging rows and invalid records stay bounded', () => {
  test('a chunk of staging rows ends at CHUNK_MAX_CHARS, whatever its row count', () => {
    const big = 'y'.repeat(300_000)
    const servers = Array.from({length: 20}, (_, i) => ({
      name: `io.big/r-${i}`,
      version: '1.0.0',
      description: big,
    }))
    const counts = {skipped: 0}
    const chunks = [...stagingChunks(servers, false, counts, () => false)]
    assert.equal(chunks.join('').split('\n').length - 1, 20, 'every row once')
    assert.ok(chunks.length >= 5, `${chunks.length} chunks`)
    // A chunk ends with the row that takes it past the bound.
    for (const c of chunks) assert.ok(c.length < CHUNK_MAX_CHARS + 2 * big.length, `${c.length}`)
  })

  test('a stream keeps the first invalid records and counts them all', () => {
    const items = Array.from({length: MAX_INVALID_KEPT + 50}, () => ({}))
    const stream = streamRegistryDocument(
      JSON.stringify([...items, {name: 'io.x/ok', version: '1'}]),
      'f',
    )
    assert.equal([...stream].length, 1)
    assert.equal(stream.invalidCount, MAX_INVALID_KEPT + 50)
    assert.equal(stream.invalid.length, MAX_INVALID_KEPT)
    assert.equal(stream.invalid[0]?.index, 0)
  })
})
