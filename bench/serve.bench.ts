/**
 * `toolgate serve` vs a bare node:http server (the practical ceiling), side by side in one run,
 * with autocannon at 64 connections on loopback (issue 2, "Performance"):
 *
 *   bare node:http, fixed body = toolgate's own first page (30 items, same bytes)
 *   toolgate serve (anonymous, embedded SQLite) over 10,000 and 100,000 stored server versions,
 *   GET /registry/default/v0.1/servers?limit=30 — first page and the page at 90% depth
 *   peak RSS (VmHWM) of the serve process at 100,000 versions
 *
 * toolgate keeps finished response bodies in a cache tagged with the store's data version, so the
 * load cells (one URL, repeated) measure cache hits; the walk over every page that finds the 90%
 * cursor is all misses, and its mean time per page is reported as the uncached cost.
 *
 * Registries are generated into a temp dir (scripts/registry-data, ~1.3 KB per version, shaped
 * like examples/registry.json). Bounded: ~5 s per cell plus loading. Env: BENCH_SECONDS (default 4),
 * BENCH_SIZES (default "10000,100000"), BENCH_TOOLGATE (a built executable, e.g. build/toolgate, to
 * measure instead of the sources run by the pinned Node).
 */
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join, resolve} from 'node:path'
import {load, type LoadResult} from './helpers/load.ts'
import {peakRssMb, ROOT, start, type Proc} from './helpers/processes.ts'
import {startServe} from './helpers/serve-fixture.ts'
import {fmt, table} from './helpers/table.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4)
const SIZES = (process.env.BENCH_SIZES ?? '10000,100000').split(',').map(Number)
const CONNECTIONS = 64
const PAGE = 30
const BINARY = process.env.BENCH_TOOLGATE ? resolve(process.env.BENCH_TOOLGATE) : undefined

const work = mkdtempSync(join(tmpdir(), 'toolgate-bench-'))
const procs: Proc[] = []
const log = (msg: string) => process.stderr.write(`serve.bench: ${msg}\n`)

interface Cell {
  name: string
  result: LoadResult
}

/**
 * Walks every page (limit=100) and returns the cursor at which 90% of the entries lie before, and
 * the mean time of one page on the walk: each page is requested once, so this is the cost of a
 * response-cache miss (one connection, client overhead included).
 */
async function cursorAt90(
  listUrl: string,
): Promise<{cursor: string; total: number; coldPageMs: number}> {
  const boundaries: {seen: number; cursor: string}[] = []
  let seen = 0
  let cursor: string | undefined
  let pages = 0
  const started = performance.now()
  for (let guard = 0; guard < 100_000; guard++) {
    pages++
    const url = `${listUrl}?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
    const res = await fetch(url)
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${await res.text()}`)
    const body = (await res.json()) as {servers: unknown[]; metadata: {nextCursor?: string}}
    seen += body.servers.length
    cursor = body.metadata.nextCursor
    if (!cursor) break
    boundaries.push({seen, cursor})
  }
  const target = boundaries.find((b) => b.seen >= seen * 0.9)
  if (!target) throw new Error('registry has a single page')
  return {cursor: target.cursor, total: seen, coldPageMs: (performance.now() - started) / pages}
}

async function measure(name: string, url: string): Promise<Cell> {
  log(`${name}: ${SECONDS}s at ${CONNECTIONS} connections`)
  const result = await load(url, {connections: CONNECTIONS, seconds: SECONDS})
  if (result.non2xx > 0 || result.errors > 0)
    log(`WARNING ${name}: ${result.non2xx} non-2xx, ${result.errors} errors`)
  return {name, result}
}

async function main(): Promise<void> {
  const cells: Cell[] = []
  const facts: Record<
    string,
    {loadMs: number; rssMb: number; total: number; coldPageMs: number; first: Cell; deep: Cell}
  > = {}
  let firstPageBody: string | undefined

  for (const size of SIZES) {
    log(`generating and loading ${size} versions`)
    const tg = await startServe(work, size, BINARY)
    procs.push(tg)
    const listUrl = `${tg.url}/registry/default/v0.1/servers`
    firstPageBody ??= await (await fetch(`${listUrl}?limit=${PAGE}`)).text()
    const {cursor, total, coldPageMs} = await cursorAt90(listUrl)
    const first = await measure(`toolgate ${size} first page`, `${listUrl}?limit=${PAGE}`)
    const deep = await measure(
      `toolgate ${size} page @90%`,
      `${listUrl}?limit=${PAGE}&cursor=${encodeURIComponent(cursor)}`,
    )
    cells.push(first, deep)
    facts[size] = {
      loadMs: tg.loadMs,
      rssMb: peakRssMb(tg.child.pid as number),
      total,
      coldPageMs,
      first,
      deep,
    }
    await tg.stop()
  }

  // The ceiling serves toolgate's own first page, byte for byte.
  const bodyFile = join(work, 'body.json')
  writeFileSync(bodyFile, firstPageBody ?? '{}')
  const bare = await start([join(ROOT, 'bench', 'helpers', 'bare-server.ts'), bodyFile])
  procs.push(bare)
  const bareCell = await measure('bare node:http (same 30 items)', String(bare.ready.url))
  await bare.stop()

  const bareRps = bareCell.result.rps
  const rows = [bareCell, ...cells].map((c) => [
    c.name,
    fmt(c.result.rps, 0),
    bareRps > 0 ? `${fmt((100 * c.result.rps) / bareRps, 0)}%` : 'n/a',
    fmt(c.result.p50, 1),
    fmt(c.result.p99, 1),
    fmt(c.result.mean, 2),
    String(c.result.non2xx + c.result.errors),
  ])
  const bytes = Buffer.byteLength(firstPageBody ?? '')
  process.stdout.write(
    `\n## serve: toolgate serve (${BINARY ?? 'from source'}) vs bare node:http — ${CONNECTIONS} connections, ${SECONDS}s per cell, body ${bytes} bytes (${new Date().toISOString()})\n\n`,
  )
  process.stdout.write(
    table(['scenario', 'req/s', 'vs bare', 'p50 ms', 'p99 ms', 'mean ms', 'errors'], rows) + '\n\n',
  )

  const sizeRows = Object.entries(facts).map(([size, f]) => [
    `${size} versions`,
    String(f.total),
    `${fmt(f.loadMs / 1000, 1)} s`,
    `${fmt(f.rssMb, 0)} MB`,
    `${fmt(f.coldPageMs, 2)} ms`,
  ])
  process.stdout.write(
    table(
      [
        'registry',
        'entries listed',
        'start+load',
        'peak RSS (VmHWM)',
        'uncached page (limit=100, walk)',
      ],
      sizeRows,
    ) + '\n\n',
  )

  const targets: (string | number)[][] = []
  const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL')
  for (const [size, f] of Object.entries(facts)) {
    const share = f.first.result.rps / bareRps
    targets.push([
      `req/s ≥ 50% of bare (${size}, first page)`,
      `${fmt(100 * share, 0)}%`,
      '≥ 50%',
      verdict(share >= 0.5),
    ])
    const p99 = Math.max(f.first.result.p99, f.deep.result.p99)
    targets.push([
      `p99 ≤ 10 ms at ${CONNECTIONS} conns (${size}, worst page)`,
      `${fmt(p99, 1)} ms`,
      '≤ 10 ms',
      verdict(p99 <= 10),
    ])
    // Cost of a page = mean latency under the same load.
    const ratio = f.deep.result.mean / f.first.result.mean
    targets.push([
      `page @90% ≤ 1.5× first page (${size}, mean latency)`,
      `${fmt(ratio, 2)}×`,
      '≤ 1.5×',
      verdict(ratio <= 1.5),
    ])
  }
  const big = facts[100000]
  if (big)
    targets.push([
      'peak RSS ≤ 300 MB (100000 versions)',
      `${fmt(big.rssMb, 0)} MB`,
      '≤ 300 MB',
      verdict(big.rssMb <= 300),
    ])
  process.stdout.write(table(['target', 'measured', 'target', 'result'], targets) + '\n')
  process.stdout.write(
    '\nNote: the load generator, the server under test and anything else running share this machine; figures are indicative.\n',
  )
}

try {
  await main()
} finally {
  for (const p of procs) await p.stop()
  rmSync(work, {recursive: true, force: true})
}
