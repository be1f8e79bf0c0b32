/**
 * The performance table of issue 19, every row measured in this one run next to its baseline:
 * wrk (1 thread, 64 connections, loopback) against
 *
 *   serve over 100,000 versions vs a bare node:http server sending serve's first page, byte for
 *   byte: the same first page (response cache), every page cursor of a walk at limit=30 in
 *   rotation (more pages than the response cache holds: misses), 2,000 rotating searches
 *   ("<title word> <number>", each a different query; the issue's row), and searches that never
 *   repeat (every one a response-cache miss, reported beside it);
 *   proxy, a JSON-RPC POST, vs nginx (1 worker) and Caddy (GOMAXPROCS=1) in front of the same
 *   upstream (a baseline whose binary is missing is skipped, and the table says so);
 *
 * Each serve and proxy row also gives the CPU time (user + system, /proc) the process under test
 * spent per request during its cell: where its share of the 2 cores goes. Plus the uncached Cedar
 * decision (in-process, p50 over 5,000 decisions at 1, 50 and 500 policies) and serve's peak RSS
 * (VmHWM) at 100,000 versions after all its cells.
 *
 *   node_modules/.bin/node bench/perf-table.bench.ts     (env BENCH_SECONDS, default 4)
 */
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {Authorizer} from '../src/lib/authz/authorizer.ts'
import {validateAuthzConfig} from '../src/lib/authz/policy-file.ts'
import {startCaddy} from './helpers/caddy.ts'
import {ARGS, CLAIMS, policies} from './helpers/cedar-fixture.ts'
import {BODY, UPSTREAM} from './helpers/json-rpc-upstream.ts'
import type {LoadResult} from './helpers/load.ts'
import {startNginx} from './helpers/nginx.ts'
import {cpuMicros, peakRssMb, ROOT, start} from './helpers/processes.ts'
import {startServe} from './helpers/serve-fixture.ts'
import {fmt, table} from './helpers/table.ts'
import {hasWrk, wrk, type WrkOptions} from './helpers/wrk.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4)
const VERSIONS = 100_000
const SEARCHES = 2_000
const UNIQUE_SEARCHES = 300_000
const work = mkdtempSync(join(tmpdir(), 'toolgate-perf-'))
const stops: Array<() => Promise<void>> = []
const log = (msg: string) => process.stderr.write(`perf-table: ${msg}\n`)

interface Row {
  name: string
  cell: LoadResult
  /** CPU µs per request of the process under test (serve or proxy) during its cell. */
  cpuPerRequest: number
  baseline: string
  base: LoadResult | undefined
}

async function measure(name: string, url: string, opts: WrkOptions = {}): Promise<LoadResult> {
  log(`${name}: ${SECONDS}s`)
  const r = await wrk(url, {seconds: SECONDS, ...opts})
  if (r.non2xx > 0 || r.errors > 0) log(`WARNING ${name}: ${r.non2xx} non-2xx, ${r.errors} errors`)
  return r
}

/** `measure`, plus the CPU the process `pid` used per request meanwhile. */
async function measureCpu(
  name: string,
  url: string,
  pid: number,
  opts: WrkOptions = {},
): Promise<{cell: LoadResult; cpuPerRequest: number}> {
  const before = cpuMicros(pid)
  const cell = await measure(name, url, opts)
  return {cell, cpuPerRequest: (cpuMicros(pid) - before) / (cell.rps * SECONDS)}
}

/** Every page cursor of a walk at limit=30, as request paths. */
async function pagePaths(listUrl: string): Promise<string[]> {
  const base = new URL(listUrl).pathname
  const paths: string[] = []
  let cursor: string | undefined
  for (let guard = 0; guard < 100_000; guard++) {
    const res = await fetch(
      `${listUrl}?limit=30${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    )
    const body = (await res.json()) as {metadata: {nextCursor?: string}}
    cursor = body.metadata.nextCursor
    if (!cursor) break
    paths.push(`${base}?limit=30&cursor=${encodeURIComponent(cursor)}`)
  }
  return paths
}

/**
 * "<first word of a title> <number>": each a different query, most matching a few versions.
 * `count` beyond SEARCHES gives queries that never repeat within a cell: response-cache misses.
 */
async function searchPaths(listUrl: string, count = SEARCHES): Promise<string[]> {
  const base = new URL(listUrl).pathname
  const res = await fetch(`${listUrl}?limit=100`)
  const body = (await res.json()) as {servers: {server: {title?: string}}[]}
  const words = [...new Set(body.servers.map((e) => (e.server.title ?? 'server').split(' ')[0]))]
  const paths: string[] = []
  for (let i = 0; i < count; i++) {
    const term = `${words[i % words.length]} ${count > SEARCHES ? i : (i * 17) % 20_000}`
    paths.push(`${base}?limit=30&search=${encodeURIComponent(term)}`)
  }
  return paths
}

function cedarP50(n: number): number {
  const config = validateAuthzConfig({
    version: '1.0',
    type: 'cedarv1',
    cedar: {policies: policies(n)},
  })
  const tool = n === 1 ? 'tool0' : `tool${Math.floor(n / 2) + 1}`
  const spec = {
    action: 'call_tool' as const,
    id: tool,
    args: ARGS,
    annotations: {readOnlyHint: true, destructiveHint: false},
  }
  const authz = new Authorizer(config, {cacheSize: 0})
  const samples: number[] = []
  for (let i = 0; i < 5200; i++) {
    const t = process.hrtime.bigint()
    authz.decide(authz.principal('alice', CLAIMS), spec, false)
    if (i >= 200) samples.push(Number(process.hrtime.bigint() - t) / 1000)
  }
  samples.sort((a, b) => a - b)
  return samples[Math.floor(samples.length / 2)] as number
}

async function serveRows(rows: Row[]): Promise<number> {
  log(`generating and loading ${VERSIONS} versions`)
  const tg = await startServe(work, VERSIONS)
  stops.push(() => tg.stop())
  const listUrl = `${tg.url}/registry/default/v0.1/servers`
  const first = `${listUrl}?limit=30`
  const bodyFile = join(work, 'first-page.json')
  writeFileSync(bodyFile, await (await fetch(first)).text())
  const bare = await start([join(ROOT, 'bench', 'helpers', 'bare-server.ts'), bodyFile])
  stops.push(() => bare.stop())
  const bareUrl = String(bare.ready.url)
  const deep = await pagePaths(listUrl)
  const searches = await searchPaths(listUrl)
  const unique = await searchPaths(listUrl, UNIQUE_SEARCHES)
  const cells: [string, WrkOptions][] = [
    ['serve, same first page (response cache)', {paths: [new URL(first).pathname + '?limit=30']}],
    [`serve, ${deep.length} rotating deep cursors`, {paths: deep}],
    [`serve, ${SEARCHES} rotating searches`, {paths: searches}],
    ['serve, searches never repeated (uncached)', {paths: unique}],
  ]
  for (const [name, opts] of cells) {
    // The baseline right before its cell: figures measured minutes apart drift on a shared machine.
    const base = await measure(`bare for: ${name}`, bareUrl, opts)
    const {cell, cpuPerRequest} = await measureCpu(name, tg.url, tg.child.pid as number, opts)
    rows.push({name, cell, cpuPerRequest, baseline: 'bare node:http', base})
  }
  const rss = peakRssMb(tg.child.pid as number)
  await tg.stop()
  await bare.stop()
  return rss
}

async function proxyRows(rows: Row[]): Promise<void> {
  const upstream = await start(['--input-type=module', '-e', UPSTREAM])
  stops.push(() => upstream.stop())
  const port = Number(upstream.ready.port)
  const proxy = await start([
    join(ROOT, 'bin', 'dev.js'),
    'proxy',
    '--json',
    '--target-uri',
    `http://127.0.0.1:${port}`,
    'bench',
  ])
  stops.push(() => proxy.stop())
  const post: WrkOptions = {
    method: 'POST',
    body: BODY,
    headers: {'content-type': 'application/json'},
    paths: ['/mcp'],
  }
  const nginx = await startNginx(port, BODY)
  stops.push(() => nginx.stop())
  const caddy = await startCaddy(port, BODY)
  if (caddy) stops.push(() => caddy.stop())
  const viaNginx = await measure('nginx (1 worker)', nginx.url, post)
  const {cell: viaProxy, cpuPerRequest} = await measureCpu(
    'toolgate proxy',
    String(proxy.ready.url),
    proxy.child.pid as number,
    post,
  )
  const viaCaddy = caddy ? await measure('Caddy (GOMAXPROCS=1)', caddy.url, post) : undefined
  rows.push({
    name: 'proxy, JSON-RPC POST',
    cell: viaProxy,
    cpuPerRequest,
    baseline: 'nginx (1 worker)',
    base: viaNginx,
  })
  rows.push({
    name: 'proxy, JSON-RPC POST',
    cell: viaProxy,
    cpuPerRequest,
    baseline: caddy ? 'Caddy (GOMAXPROCS=1)' : 'Caddy: not installed, skipped',
    base: viaCaddy,
  })
}

async function main(): Promise<void> {
  if (!(await hasWrk())) throw new Error('wrk is not installed (Debian package wrk)')
  const rows: Row[] = []
  const rss = await serveRows(rows)
  await proxyRows(rows)
  const cedar = [1, 50, 500].map((n) => [n, cedarP50(n)] as const)

  const pct = (r: Row) => (r.base ? `${fmt((100 * r.cell.rps) / r.base.rps, 0)}%` : 'n/a')
  process.stdout.write(
    `\n## issue 19 table — wrk -t1 -c64, ${SECONDS}s per cell, ${VERSIONS} versions (${new Date().toISOString()})\n\n`,
  )
  process.stdout.write(
    table(
      [
        'case',
        'req/s',
        'p50 ms',
        'p99 ms',
        'CPU µs/req',
        'baseline',
        'baseline req/s',
        'share',
        'errors',
      ],
      rows.map((r) => [
        r.name,
        fmt(r.cell.rps, 0),
        fmt(r.cell.p50, 2),
        fmt(r.cell.p99, 2),
        fmt(r.cpuPerRequest, 0),
        r.baseline,
        r.base ? fmt(r.base.rps, 0) : 'n/a',
        pct(r),
        String(r.cell.non2xx + r.cell.errors),
      ]),
    ) + '\n\n',
  )
  const share = (i: number) => (rows[i]?.base ? rows[i].cell.rps / rows[i].base.rps : NaN)
  const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL')
  const p99 = (i: number) => rows[i]?.cell.p99 ?? NaN
  const targets: string[][] = [
    ['serve first page ≥ 60% of bare', `${fmt(100 * share(0), 0)}%`, verdict(share(0) >= 0.6)],
    [
      'serve deep cursors ≥ 25% of bare, p99 ≤ 10 ms',
      `${fmt(100 * share(1), 0)}%, p99 ${fmt(p99(1), 1)} ms`,
      verdict(share(1) >= 0.25 && p99(1) <= 10),
    ],
    [
      'serve searches ≥ 10% of bare, p99 ≤ 20 ms',
      `${fmt(100 * share(2), 0)}%, p99 ${fmt(p99(2), 1)} ms`,
      verdict(share(2) >= 0.1 && p99(2) <= 20),
    ],
    [
      'same, searches never repeated (every one a cache miss)',
      `${fmt(100 * share(3), 0)}%, p99 ${fmt(p99(3), 1)} ms`,
      verdict(share(3) >= 0.1 && p99(3) <= 20),
    ],
    ['proxy ≥ 85% of nginx', `${fmt(100 * share(4), 0)}%`, verdict(share(4) >= 0.85)],
    [
      'Cedar uncached decision p50 ≤ 40 µs',
      cedar.map(([n, us]) => `${n}: ${fmt(us, 1)} µs`).join(', '),
      verdict(cedar.every(([, us]) => us <= 40)),
    ],
    ['serve peak RSS at 100k versions ≤ 200 MB', `${fmt(rss, 0)} MB`, verdict(rss <= 200)],
  ]
  process.stdout.write(table(['target', 'measured', 'result'], targets) + '\n')
  process.stdout.write(
    '\nNote: wrk, the server under test and anything else running share this 2-core machine; each baseline is measured right before its cell.\n',
  )
}

try {
  await main()
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => undefined)
  rmSync(work, {recursive: true, force: true})
}
