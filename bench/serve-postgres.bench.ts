/**
 * `serve` on SQLite vs PostgreSQL (issue #15), same machine, same 100,000-version source, 64
 * connections: the first page (response cache), rotating deep cursors (every page of the registry
 * in turn: far more pages than the response cache holds, so nearly all uncached) and rotating
 * searches. Then re-syncs of all 100,000 versions on PostgreSQL while readers run, once at a fixed
 * request rate and saturated, BENCH_PG_SYNC_ROUNDS times each (default 3): each sync's duration,
 * and the readers' p99 during it against their idle p99 measured just before; the verdict is on the
 * median of the rounds, since the idle p99 of one round moves a lot on a shared 2-core machine.
 * Targets: PostgreSQL uncached >= 50% of SQLite uncached; sync <= 30 s; p99 during <= 2x idle.
 * BENCH_PG_PROBE=1: the PostgreSQL replica runs with a probe (helpers/serve-probe.ts) and each
 * sync is followed by a table relating the readers' slow requests to the sync's phases and to the
 * replica's event-loop stalls and GC pauses (the probe's timer costs a little: attribution only).
 * BENCH_PG_READERS=open|saturated: only that kind of readers during the re-syncs (default both).
 * BENCH_PG_NODE_FLAGS: Node.js flags for the PostgreSQL replica (space-separated; experiments).
 * Each kind of readers runs in two topologies: "shared cores" (the database, the replica and the
 * load generator float over both cores: the sync's database work takes CPU the replica had while
 * idle) and "database on its own core" (the database pinned to one core and the replica to the
 * other, with taskset, for the idle and the sync alike: as in a scale-out deployment, where the
 * database is a server of its own). BENCH_PG_TOPOLOGY=shared|split runs only one of them.
 */
import {execFileSync} from 'node:child_process'
import {mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync} from 'node:fs'
import {availableParallelism, tmpdir} from 'node:os'
import {finished} from 'node:stream/promises'
import {join} from 'node:path'
import {Agent, request} from 'undici'
import {syntheticServers, wrap} from '../scripts/registry-data/generate.ts'
import {startPgCluster, type PgCluster} from '../test/helpers/postgres.ts'
import {load} from './helpers/load.ts'
import {attributeSlowRequests} from './helpers/sync-attribution.ts'
import {ROOT, start, waitFor200, type Proc} from './helpers/processes.ts'
import {fmt, table} from './helpers/table.ts'

const VERSIONS = Number(process.env.BENCH_PG_VERSIONS ?? 100_000)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4)
// Re-syncs measured per kind of readers: one sync's ratio swings with the idle p99 before it
// (10–36 ms at the fixed rate on the shared 2-core machine), so the verdict is on the median.
const SYNC_ROUNDS = Math.max(1, Number(process.env.BENCH_PG_SYNC_ROUNDS ?? 3))
const CONNECTIONS = 64
const PROBE = process.env.BENCH_PG_PROBE === '1'
const READERS = process.env.BENCH_PG_READERS ?? 'both'
const TOPOLOGY = process.env.BENCH_PG_TOPOLOGY ?? 'both'
const ALL_CPUS = `0-${availableParallelism() - 1}`
const NODE_FLAGS = (process.env.BENCH_PG_NODE_FLAGS ?? '').split(' ').filter(Boolean)
const work = mkdtempSync(join(tmpdir(), 'toolgate-bench-pg-'))
const log = (msg: string) => process.stderr.write(`serve-postgres.bench: ${msg}\n`)

function writeSource(path: string, generation: number): void {
  const servers = syntheticServers(VERSIONS) as {description?: string}[]
  if (generation > 1)
    for (const s of servers) s.description = `${s.description ?? ''} (g${generation})`
  writeFileSync(path, JSON.stringify(wrap(servers as never[], '2025-11-01T00:00:00Z')))
}

/** Every thread of `pid` to `cpus` (threads started later inherit it). */
function pin(pid: number | string, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], {stdio: 'ignore'})
}

/**
 * The database's processes (backends forked later inherit the postmaster's CPUs) and the replica
 * to CPUs of their own, or back to every CPU.
 */
function placeProcesses(cluster: PgCluster, replica: Proc, split: boolean): void {
  const postmaster = readFileSync(join(cluster.dir, 'data', 'postmaster.pid'), 'utf8').split(
    '\n',
  )[0]!
  const children = execFileSync('pgrep', ['-P', postmaster]).toString().split('\n').filter(Boolean)
  for (const pid of [postmaster, ...children]) pin(pid, split ? '1' : ALL_CPUS)
  pin(replica.child.pid!, split ? '0' : ALL_CPUS)
}

async function startServe(
  name: string,
  storage: string,
  source: string,
): Promise<Proc & {url: string; internalUrl: string}> {
  const dir = join(work, name)
  const config = join(work, `${name}.yaml`)
  writeFileSync(
    config,
    [
      'sources:',
      `  - {name: bench, file: {path: ${JSON.stringify(source)}}}`,
      'registries:',
      '  - {name: default, sources: [bench]}',
      `storage: ${storage}`,
      'auth: {mode: anonymous}',
    ].join('\n'),
  )
  const env = {
    PATH: process.env.PATH,
    HOME: dir,
    XDG_DATA_HOME: join(dir, 'data'),
    XDG_STATE_HOME: join(dir, 's'),
    XDG_CONFIG_HOME: join(dir, 'c'),
    ...(PROBE && name === 'postgres'
      ? {NODE_OPTIONS: `--import=${join(ROOT, 'bench/helpers/serve-probe.ts')}`}
      : {}),
  }
  const args = [
    ...(name === 'postgres' ? NODE_FLAGS : []),
    join(ROOT, 'bin', 'dev.js'),
    'serve',
    '--config',
    config,
    '--address',
    '127.0.0.1:0',
    '--internal-address',
    '127.0.0.1:0',
    '--json',
  ]
  const proc = await start(args, {env, timeoutMs: 300_000})
  const internalUrl = String(proc.ready.internalUrl)
  await waitFor200(`${internalUrl}/readiness`, 300_000)
  return {...proc, url: String(proc.ready.url), internalUrl}
}

interface Rotating {
  rps: number
  p50: number
  p99: number
  errors: number
}

function summary(latencies: number[], seconds: number, errors: number): Rotating {
  latencies.sort((a, b) => a - b)
  const at = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0
  return {rps: latencies.length / seconds, p50: at(0.5), p99: at(0.99), errors}
}

/**
 * Readers over keep-alive connections, each request taking the next path of the rotation, until
 * `done()` (checked before each request) or `seconds`. Closed loop (`rate` undefined): 64 workers,
 * each sending its next request when the last is answered, so the server is saturated. Open loop
 * (`rate` req/s): requests start on a fixed schedule whatever the answers do, and each latency is
 * counted from its scheduled start (no coordinated omission), so a stall shows in full.
 */
async function readers(
  base: string,
  paths: string[],
  seconds: number,
  rate?: number,
  done: () => boolean = () => false,
  timed?: Array<[number, number]>,
): Promise<Rotating> {
  const agent = new Agent({connections: CONNECTIONS, pipelining: 1})
  const latencies: number[] = []
  let errors = 0
  let next = 0
  const started = performance.now()
  const end = started + seconds * 1000
  const over = () => done() || performance.now() >= end
  const one = async (from: number) => {
    const res = await request(base + paths[next++ % paths.length]!, {dispatcher: agent})
    // Read to the end without decoding: a ~30 KB string per answer was the load generator's own
    // CPU and garbage on the 2 cores it shares with what it measures.
    res.body.resume()
    await finished(res.body)
    if (res.statusCode !== 200) errors++
    const latency = performance.now() - from
    latencies.push(latency)
    timed?.push([performance.timeOrigin + from, latency])
  }
  if (rate === undefined) {
    const worker = async () => {
      while (!over()) await one(performance.now())
    }
    await Promise.all(Array.from({length: CONNECTIONS}, worker))
  } else {
    const inFlight: Promise<void>[] = []
    for (let i = 0; !over(); i++) {
      const due = started + (i * 1000) / rate
      const wait = due - performance.now()
      if (wait > 0) await new Promise((r) => setTimeout(r, wait))
      inFlight.push(one(due))
    }
    await Promise.all(inFlight)
  }
  await agent.close()
  return summary(latencies, (performance.now() - started) / 1000, errors)
}

async function cursors(url: string): Promise<string[]> {
  const out: string[] = []
  let cursor: string | undefined
  do {
    const res = await fetch(
      `${url}/registry/default/v0.1/servers?limit=30${cursor ? `&cursor=${cursor}` : ''}`,
    )
    const body = (await res.json()) as {metadata: {nextCursor?: string}}
    cursor = body.metadata.nextCursor
    if (cursor) out.push(`/registry/default/v0.1/servers?limit=30&cursor=${cursor}`)
  } while (cursor)
  return out
}

async function main(): Promise<void> {
  let cluster: PgCluster | undefined
  const procs: Proc[] = []
  try {
    const source = join(work, 'registry.json')
    writeSource(source, 1)
    cluster = await startPgCluster()
    const dbUrl = await cluster.createDatabase('bench')
    log(`${VERSIONS} versions; starting serve on SQLite and on PostgreSQL`)
    const t0 = Date.now()
    const lite = await startServe(
      'sqlite',
      `{sqlite: {path: ${JSON.stringify(join(work, 'r.db'))}}}`,
      source,
    )
    const liteLoad = Date.now() - t0
    const t1 = Date.now()
    const pg = await startServe('postgres', `{postgres: {url: ${JSON.stringify(dbUrl)}}}`, source)
    const pgLoad = Date.now() - t1
    procs.push(lite, pg)
    const pages = await cursors(lite.url)
    const searches = Array.from(
      {length: 3000},
      (_, i) =>
        `/registry/default/v0.1/servers?search=${encodeURIComponent(`-${String(i).padStart(4, '0')}`)}`,
    )
    const rows: (string | number)[][] = []
    const results: Record<string, Record<string, Rotating>> = {}
    for (const [name, s] of [
      ['sqlite', lite],
      ['postgres', pg],
    ] as const) {
      const first = await load(`${s.url}/registry/default/v0.1/servers`, {
        connections: CONNECTIONS,
        seconds: SECONDS,
      })
      rows.push([
        name,
        'first page (cached)',
        fmt(first.rps, 0),
        fmt(first.p50),
        fmt(first.p99),
        first.errors + first.non2xx,
      ])
      results[name] = {}
      for (const [label, paths] of [
        ['deep cursors (rotating)', pages],
        ['searches (rotating)', searches],
      ] as const) {
        await readers(s.url, paths.slice(0, 200), 1) // warm-up
        const r = await readers(s.url, paths, SECONDS)
        results[name]![label] = r
        rows.push([name, label, fmt(r.rps, 0), fmt(r.p50), fmt(r.p99), r.errors])
      }
    }
    process.stdout.write(
      `\nserve at ${CONNECTIONS} connections, ${VERSIONS} versions (${pages.length} pages of 30)\n`,
    )
    process.stdout.write(
      table(['store', 'request', 'req/s', 'p50 ms', 'p99 ms', 'errors'], rows) + '\n',
    )
    for (const label of ['deep cursors (rotating)', 'searches (rotating)']) {
      const ratio = results.postgres![label]!.rps / results.sqlite![label]!.rps
      process.stdout.write(
        `${label}: PostgreSQL/SQLite = ${fmt(ratio * 100, 0)}% (target >= 50%) ${ratio >= 0.5 ? 'MET' : 'MISSED'}\n`,
      )
    }
    process.stdout.write(
      `initial load: SQLite ${fmt(liteLoad / 1000)} s, PostgreSQL ${fmt(pgLoad / 1000)} s (process start included)\n`,
    )

    // The SQLite replica watches the same source file: stopped here, or it would re-sync the same
    // 100,000 versions on the same 2 cores during every PostgreSQL sync below.
    await lite.stop()
    procs.splice(procs.indexOf(lite), 1)

    // Re-syncs of every version on PostgreSQL while readers run: first readers at a fixed rate
    // (a quarter of what this store served saturated above: the load of a server with headroom),
    // then saturated readers (every core busy before the sync starts: the stress case).
    const rate = Math.round(results.postgres!['deep cursors (rotating)']!.rps / 4)
    const syncRows: (string | number)[][] = []
    let generation = 1
    const runs = (['shared', 'split'] as const).flatMap((topology) =>
      (
        [
          [`${rate} req/s (open loop)`, rate],
          [`${CONNECTIONS} connections (saturated)`, undefined],
        ] as const
      ).map(([readersLabel, r]) => ({topology, readersLabel, r})),
    )
    for (const {topology, readersLabel, r} of runs) {
      if (READERS !== 'both' && (r === undefined) !== (READERS === 'saturated')) continue
      if (TOPOLOGY !== 'both' && TOPOLOGY !== topology) continue
      placeProcesses(cluster, pg, topology === 'split')
      const label = `${readersLabel}, ${topology === 'split' ? 'database on its own core' : 'shared cores'}`
      // The issue's 30 s is for the whole machine; with the database on its own core the replica
      // has the other one alone, and only the readers' p99 is judged (the sync time is shown).
      const syncMet = (ms: number) => topology === 'split' || ms <= 30_000
      const verdict = (met: boolean) =>
        `${topology === 'split' ? 'p99 ' : ''}${met ? 'MET' : 'MISSED'}`
      const rounds: Array<{syncMs: number; ratio: number; errors: number}> = []
      for (let round = 1; round <= SYNC_ROUNDS; round++) {
        // The next generation is written aside first and renamed in: the file watcher never sees a
        // half-written file, and the ~2 s of generating it is not spent while readers run.
        writeSource(`${source}.next`, ++generation)
        const idle = await readers(pg.url, pages, SECONDS * 2, r)
        const logged = pg.stderrMark()
        const everyUpdated = new RegExp(`"?updated"?[:=]${VERSIONS}\\b`)
        // This sync's own line: every version updated (a re-read of unchanged data would say 0).
        // Looked for at most every 50 ms: readers ask before every request.
        let seen = false
        let lookedAt = 0
        const synced = () => {
          if (seen || performance.now() - lookedAt < 50) return seen
          lookedAt = performance.now()
          seen = pg
            .stderrSince(logged)
            .split('\n')
            .some((l) => l.includes('registry source synced') && everyUpdated.test(l))
          return seen
        }
        renameSync(`${source}.next`, source)
        const started = Date.now()
        const timed: Array<[number, number]> = []
        const during = await readers(pg.url, pages, 120, r, synced, timed)
        const syncMs = Date.now() - started
        if (PROBE)
          process.stdout.write(
            `\n${label}, sync ${round}: readers' requests by phase of the sync\n` +
              attributeSlowRequests(timed, pg.stderrSince(logged).split('\n'), 2 * idle.p99) +
              '\n',
          )
        const met = syncMet(syncMs) && during.p99 <= 2 * idle.p99
        syncRows.push([
          label,
          fmt(syncMs / 1000),
          fmt(idle.p99),
          fmt(during.p99),
          fmt(during.p99 / idle.p99, 2),
          during.errors,
          verdict(met),
        ])
        rounds.push({syncMs, ratio: during.p99 / idle.p99, errors: during.errors})
      }
      const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
      const syncMedian = median(rounds.map((x) => x.syncMs))
      const ratioMedian = median(rounds.map((x) => x.ratio))
      const errors = rounds.reduce((n, x) => n + x.errors, 0)
      syncRows.push([
        `${label}: median of ${rounds.length}`,
        fmt(syncMedian / 1000),
        '',
        '',
        fmt(ratioMedian, 2),
        errors,
        verdict(syncMet(syncMedian) && ratioMedian <= 2 && errors === 0),
      ])
    }
    process.stdout.write(
      `\nre-sync of ${VERSIONS} changed versions on PostgreSQL while readers walk the cursors ` +
        '(targets: sync <= 30 s on shared cores, readers p99 during the sync <= 2x idle p99)\n' +
        table(
          ['readers', 'sync s', 'idle p99 ms', 'p99 during ms', 'ratio', 'errors', 'verdict'],
          syncRows,
        ) +
        '\n',
    )
  } finally {
    for (const p of procs) await p.stop()
    await cluster?.destroy()
    rmSync(work, {recursive: true, force: true})
  }
}

await main()
