/**
 * Issue 36's targets, measured in one run:
 *
 * 1. List filters at 100,000 versions, on both stores, in process (the store is where a filter
 *    costs): the mean cost of a page over a whole walk (limit 30, every cursor, two rounds) for
 *    `version=latest` against `transport=stdio&version=latest`, and for the deep half of the walk
 *    (cursors past the middle) likewise. Target: filtered ≤ 2× unfiltered.
 * 2. A publish reaching readers: two `serve` replicas on one PostgreSQL database with a managed
 *    source; each publish goes to replica A and replica B is polled (every 5 ms) until it lists
 *    the new version. Target: visible on every replica within 1 s. (On one replica the version is
 *    served when the publish answers: the sync runs before the answer.)
 *
 *   node_modules/.bin/node bench/registry-publish.bench.ts
 */
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {syntheticServers} from '../scripts/registry-data/generate.ts'
import {parseListQuery} from '../src/lib/registry-api/query.ts'
import {PostgresRegistryStore} from '../src/lib/registry/postgres-store.ts'
import {SqliteRegistryStore} from '../src/lib/registry/sqlite-store.ts'
import type {ListQuery, ServerJson} from '../src/lib/registry/types.ts'
import {startPgCluster, type PgCluster} from '../test/helpers/postgres.ts'
import {ROOT, start, waitFor200, type Proc} from './helpers/processes.ts'
import {fmt, table} from './helpers/table.ts'

const VERSIONS = 100_000
const ROUNDS = 2
const PUBLISHES = 20
const log = (msg: string) => process.stderr.write(`registry-publish: ${msg}\n`)
const work = mkdtempSync(join(tmpdir(), 'toolgate-publish-bench-'))

interface PageStore {
  listServersText(r: string, q: ListQuery): Promise<{servers: string[]; nextCursor?: string}>
}

/** Every cursor of a walk of `query` (the first page's is undefined). */
async function cursorsOf(store: PageStore, query: ListQuery): Promise<(string | undefined)[]> {
  const out: (string | undefined)[] = [undefined]
  for (;;) {
    const page = await store.listServersText('default', {...query, cursor: out.at(-1)})
    if (!page.nextCursor) return out
    out.push(page.nextCursor)
  }
}

async function meanMicros(store: PageStore, query: ListQuery, cursors: (string | undefined)[]) {
  const t = process.hrtime.bigint()
  for (let r = 0; r < ROUNDS; r++)
    for (const cursor of cursors) await store.listServersText('default', {...query, cursor})
  return Number(process.hrtime.bigint() - t) / 1000 / (ROUNDS * cursors.length)
}

async function filterRows(name: string, store: PageStore): Promise<(string | number)[][]> {
  const plain = parseListQuery('version=latest&limit=30')
  const plainCursors = await cursorsOf(store, plain)
  const deep = (c: (string | undefined)[]) => c.slice(Math.floor(c.length / 2))
  const rows: (string | number)[][] = []
  // stdio: the target's filter (most servers); sse: a selective one, for the honest picture.
  for (const transport of ['stdio', 'sse']) {
    const filtered = parseListQuery(`version=latest&transport=${transport}&limit=30`)
    const filteredCursors = await cursorsOf(store, filtered)
    for (const [label, a, b] of [
      ['every page', plainCursors, filteredCursors],
      ['deep half', deep(plainCursors), deep(filteredCursors)],
    ] as const) {
      const base = await meanMicros(store, plain, a)
      const f = await meanMicros(store, filtered, b)
      const target = transport === 'stdio' ? (f / base <= 2 ? 'yes' : 'NO') : '(info)'
      const pages = `${a.length}/${b.length}`
      rows.push([name, transport, label, pages, fmt(base), fmt(f), `${fmt(f / base, 2)}×`, target])
    }
  }
  // The worst case: a filter nothing matches walks every latest row for one empty page.
  const none = parseListQuery('version=latest&transport=sse&registryType=mcpb&limit=30')
  const empty = await meanMicros(store, none, [undefined])
  const base = await meanMicros(store, plain, [undefined])
  rows.push([
    name,
    'sse+mcpb',
    'no match',
    '1/1',
    fmt(base),
    fmt(empty),
    `${fmt(empty / base, 1)}×`,
    '(worst)',
  ])
  return rows
}

async function publishLatency(cluster: PgCluster): Promise<number[]> {
  const url = await cluster.createDatabase()
  const dir = join(work, 'replicas')
  const config = join(work, 'replicas.yaml')
  writeFileSync(
    config,
    [
      'sources:',
      '  - {name: team, managed: {}}',
      'auth:',
      '  mode: anonymous',
      '  authz:',
      '    cedar:',
      '      policies:',
      `        - 'permit(principal, action in [Action::"list_servers", Action::"get_server", Action::"publish"], resource);'`,
      `storage: {postgres: {url: ${JSON.stringify(url)}}}`,
      'rateLimits: {publish: {rate: 1000/s, burst: 1000}}',
    ].join('\n'),
  )
  const replica = async (n: number): Promise<Proc & {url: string}> => {
    const home = join(dir, String(n))
    const proc = await start(
      [
        join(ROOT, 'bin', 'dev.js'),
        'serve',
        '--config',
        config,
        '--address',
        '127.0.0.1:0',
        '--internal-address',
        '127.0.0.1:0',
        '--json',
      ],
      {
        env: {PATH: process.env.PATH, HOME: home, XDG_DATA_HOME: join(home, 'data')},
        timeoutMs: 60_000,
      },
    )
    await waitFor200(`${String(proc.ready.internalUrl)}/readiness`, 60_000)
    return {...proc, url: String(proc.ready.url)}
  }
  const a = await replica(1)
  const b = await replica(2)
  const out: number[] = []
  try {
    for (let i = 0; i < PUBLISHES; i++) {
      const version = `1.0.${i}`
      const res = await fetch(`${a.url}/registry/default/v0.1/publish`, {
        method: 'POST',
        headers: {'content-type': 'application/json'},
        body: JSON.stringify({name: 'io.bench/published', description: 'bench', version}),
      })
      if (res.status !== 200) throw new Error(`publish answered ${res.status}: ${await res.text()}`)
      const answered = performance.now()
      for (;;) {
        const r = await fetch(
          `${b.url}/registry/default/v0.1/servers/io.bench%2Fpublished/versions/${version}`,
        )
        await r.arrayBuffer()
        if (r.status === 200) break
        if (performance.now() - answered > 10_000)
          throw new Error('not visible on replica B in 10 s')
        await new Promise((r) => setTimeout(r, 5))
      }
      out.push(performance.now() - answered)
    }
  } finally {
    await a.stop()
    await b.stop()
  }
  return out
}

async function main(): Promise<void> {
  const servers = syntheticServers(VERSIONS) as unknown as ServerJson[]
  const rows: (string | number)[][] = []
  log(`loading ${VERSIONS} versions into SQLite`)
  const sqlite = new SqliteRegistryStore({path: join(work, 'r.db')})
  await sqlite.init()
  await sqlite.setRegistries([{name: 'default', sources: ['bench']}])
  await sqlite.replaceSource('bench', servers, new Date())
  rows.push(...(await filterRows('sqlite', sqlite)))
  await sqlite.close()

  const cluster = await startPgCluster()
  let latencies: number[]
  try {
    log(`loading ${VERSIONS} versions into PostgreSQL`)
    const pg = new PostgresRegistryStore({connection: {url: await cluster.createDatabase()}})
    await pg.init()
    await pg.setRegistries([{name: 'default', sources: ['bench']}])
    await pg.replaceSource('bench', servers, new Date())
    rows.push(...(await filterRows('postgres', pg)))
    await pg.close()
    log('publishing through replica A, reading on replica B')
    latencies = await publishLatency(cluster)
  } finally {
    await cluster.destroy()
    rmSync(work, {recursive: true, force: true})
  }
  process.stdout.write(
    '\nList filters at 100k versions: mean µs per page (limit 30), version=latest vs version=latest&transport=…\n' +
      table(
        ['store', 'transport', 'walk', 'pages', 'latest µs', 'filtered µs', 'ratio', '≤ 2×'],
        rows,
      ) +
      '\n',
  )
  const sorted = [...latencies].sort((x, y) => x - y)
  const p = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN
  process.stdout.write(
    `\nPublish on replica A → listed on replica B (PostgreSQL, ${latencies.length} publishes)\n` +
      table(
        ['p50 ms', 'p90 ms', 'max ms', '≤ 1000 ms'],
        [
          [
            fmt(p(0.5)),
            fmt(p(0.9)),
            fmt(sorted.at(-1) ?? NaN),
            (sorted.at(-1) ?? Infinity) <= 1000 ? 'yes' : 'NO',
          ],
        ],
      ) +
      '\n',
  )
}

main().catch((err: unknown) => {
  process.stderr.write(`registry-publish: ${(err as Error).stack ?? String(err)}\n`)
  rmSync(work, {recursive: true, force: true})
  process.exit(1)
})
