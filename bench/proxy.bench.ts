/**
 * `toolgate proxy` throughput, latency and memory (issue 4). Loopback only, bounded in time
 * (about 3–4 minutes with the defaults).
 *
 * Same upstream (a tiny node:http JSON-RPC responder in its own process), same load (autocannon,
 * POST of a small JSON-RPC call), one run each:
 *   direct → upstream | nginx (Debian, keepalive upstream, 1 worker) | toolgate proxy | toolgate
 *   proxy with incoming JWT validation (real oidc-provider, one RS256 token; validation cache on).
 * Then: added p50 latency (sequential requests, one connection), proxy RSS over a long run
 * (1,000,000 requests unless the time budget ends first — the table says how many ran), and a
 * 100 MB streamed response through the proxy with its RSS growth.
 *
 * Run: node_modules/.bin/node bench/proxy.bench.ts [--seconds 5] [--connections 50]
 *        [--requests 1000000] [--long-budget 150]
 */
import {readFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {parseArgs} from 'node:util'
import {Pool} from 'undici'
import {startOidcProvider} from '../test/helpers/oidc-provider.ts'
import {BODY, UPSTREAM} from './helpers/json-rpc-upstream.ts'
import {startNginx} from './helpers/nginx.ts'
import {start, type Proc} from './helpers/processes.ts'
import {table} from './helpers/table.ts'

type Autocannon = (opts: Record<string, unknown>) => Promise<{
  requests: {average: number; total: number}
  latency: {p50: number; p99: number}
  errors: number
  timeouts: number
  non2xx: number
}>
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon

const {values} = parseArgs({
  options: {
    seconds: {type: 'string', default: '5'},
    connections: {type: 'string', default: '50'},
    requests: {type: 'string', default: '1000000'},
    'long-budget': {type: 'string', default: '150'},
  },
})
const seconds = Math.min(Number(values.seconds), 30)
const connections = Number(values.connections)
const longTarget = Number(values.requests)
const longBudgetMs = Number(values['long-budget']) * 1000

/**
 * Second baseline: the least a Node + undici forwarder can do (no checks, no header rewriting
 * beyond dropping hop-by-hop fields) — the ceiling of Node+undici on this machine.
 */
const MINIMAL = `
import {createServer} from 'node:http'
import {Pool} from 'undici'
const pool = new Pool(process.env.TARGET, {connections: 128})
const hop = new Set(['connection', 'keep-alive', 'transfer-encoding', 'host', 'upgrade'])
const s = createServer((req, res) => {
  const headers = {}
  for (const k in req.headers) if (!hop.has(k)) headers[k] = req.headers[k]
  pool.stream({path: req.url, method: req.method, headers, body: req}, ({statusCode, headers}) => {
    res.writeHead(statusCode, headers)
    return res
  }).catch(() => res.destroy())
})
s.keepAliveTimeout = 65000
s.listen(0, '127.0.0.1', () => console.log(JSON.stringify({url: 'http://127.0.0.1:' + s.address().port})))
`

const rssMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024
/** CPU time (user + system) of a process so far, in ms (Linux /proc; clock ticks of 10 ms). */
const cpuMs = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(f[11]) + Number(f[12])) * 10
}
const cleanup: Array<() => Promise<void> | void> = []

/** `pid`: the process in the middle (proxy, or the upstream when direct), whose CPU per request is reported. */
async function throughput(url: string, pid: number, headers: Record<string, string> = {}) {
  const opts = {
    url: url + '/mcp',
    method: 'POST',
    body: BODY,
    headers: {'content-type': 'application/json', ...headers},
    connections,
  }
  await autocannon({...opts, duration: 1}) // warm-up: JIT, pools, validation cache
  const cpu0 = cpuMs(pid)
  const r = await autocannon({...opts, duration: seconds})
  const cpuUs = ((cpuMs(pid) - cpu0) * 1000) / r.requests.total
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    bad: r.errors + r.timeouts + r.non2xx,
    cpuUs,
  }
}

/** p50 of sequential requests on one kept-alive connection, in ms (sub-millisecond resolution). */
async function sequentialP50(
  url: string,
  headers: Record<string, string> = {},
  n = 3000,
): Promise<number> {
  const pool = new Pool(url, {connections: 1})
  const times: number[] = []
  try {
    for (let i = 0; i < n + 300; i++) {
      const t0 = process.hrtime.bigint()
      const r = await pool.request({
        path: '/mcp',
        method: 'POST',
        body: BODY,
        headers: {'content-type': 'application/json', ...headers},
      })
      await r.body.arrayBuffer()
      if (i >= 300) times.push(Number(process.hrtime.bigint() - t0) / 1e6)
    }
  } finally {
    await pool.close()
  }
  times.sort((a, b) => a - b)
  return times[Math.floor(times.length / 2)] as number
}

async function startToolgate(upstreamUrl: string, extra: string[] = []): Promise<Proc> {
  const p = await start([
    'bin/dev.js',
    'proxy',
    '--json',
    '--target-uri',
    upstreamUrl,
    ...extra,
    'bench',
  ])
  cleanup.push(() => p.stop())
  return p
}

try {
  const upstream = await start(['--input-type=module', '-e', UPSTREAM])
  cleanup.push(() => upstream.stop())
  const upstreamUrl = `http://127.0.0.1:${upstream.ready.port}`
  const nginx = await startNginx(Number(upstream.ready.port), BODY)
  cleanup.push(() => nginx.stop())
  const idp = await startOidcProvider({audience: 'api://bench'})
  cleanup.push(() => idp.close())
  const token = await idp.issueAccessToken({audience: 'api://bench', expiresIn: 3600})
  const minimal = await start(['--input-type=module', '-e', MINIMAL], {
    env: {...process.env, TARGET: upstreamUrl},
  })
  cleanup.push(() => minimal.stop())
  const plain = await startToolgate(upstreamUrl)
  const jwt = await startToolgate(upstreamUrl, [
    '--oidc-issuer',
    idp.issuer,
    '--oidc-audience',
    'api://bench',
  ])
  const auth = {authorization: `Bearer ${token}`}

  const cells: Array<[string, string, number, Record<string, string>]> = [
    ['direct', upstreamUrl, upstream.child.pid!, {}],
    ['nginx (1 worker)', nginx.url, nginx.worker(), {}],
    ['minimal undici forwarder', String(minimal.ready.url), minimal.child.pid!, {}],
    ['toolgate proxy', String(plain.ready.url), plain.child.pid!, {}],
    ['toolgate proxy + JWT', String(jwt.ready.url), jwt.child.pid!, auth],
  ]
  const rows: (string | number)[][] = []
  const results: Record<string, {rps: number; seq: number}> = {}
  for (const [name, url, pid, headers] of cells) {
    const t = await throughput(url, pid, headers)
    const seq = await sequentialP50(url, headers)
    results[name] = {rps: t.rps, seq}
    rows.push([name, Math.round(t.rps), t.p50, t.p99, seq.toFixed(3), t.bad, Math.round(t.cpuUs)])
  }
  const direct = results['direct']!
  for (const row of rows) {
    const r = results[row[0] as string]!
    row.push(row[0] === 'direct' ? '-' : (r.seq - direct.seq).toFixed(3))
  }
  console.log(
    `\nproxy throughput: ${connections} connections, ${seconds} s each, POST ${BODY.length}-byte JSON-RPC (noisy: shared 2-core machine)`,
  )
  console.log(
    table(
      [
        'path',
        'req/s',
        'p50 ms',
        'p99 ms',
        'seq p50 ms',
        'errors',
        'CPU µs/req (middle)',
        'added p50 ms',
      ],
      rows,
    ),
  )

  // Long run: RSS before/after through the plain proxy.
  const pid = plain.child.pid!
  const rssBefore = rssMb(pid)
  const started = Date.now()
  let done = 0
  const samples: number[] = [rssBefore]
  while (done < longTarget && Date.now() - started < longBudgetMs) {
    const amount = Math.min(100_000, longTarget - done)
    const r = await autocannon({
      url: String(plain.ready.url) + '/mcp',
      method: 'POST',
      body: BODY,
      headers: {'content-type': 'application/json'},
      connections,
      amount,
    })
    done += r.requests.total
    samples.push(rssMb(pid))
  }
  const rssAfter = rssMb(pid)
  const warm = samples[1] ?? rssBefore

  // 100 MB streamed response through the proxy; RSS polled while it flows.
  const before100 = rssMb(pid)
  let peak = before100
  const poll = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 20)
  const t0 = Date.now()
  const res = await fetch(String(plain.ready.url) + '/big')
  let bytes = 0
  const reader = res.body!.getReader()
  for (let r = await reader.read(); !r.done; r = await reader.read()) bytes += r.value.length
  clearInterval(poll)
  const secs = (Date.now() - t0) / 1000

  const nginxRps = results['nginx (1 worker)']!.rps
  const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED')
  const ratio = results['toolgate proxy']!.rps / nginxRps
  const ratioJwt = results['toolgate proxy + JWT']!.rps / nginxRps
  const added = results['toolgate proxy']!.seq - direct.seq
  console.log(`\nproxy memory and targets`)
  console.log(
    table(
      ['measure', 'value', 'target', 'verdict'],
      [
        [
          'toolgate / nginx req/s',
          `${(ratio * 100).toFixed(0)} %`,
          '>= 80 %',
          verdict(ratio >= 0.8),
        ],
        [
          'toolgate+JWT / nginx req/s',
          `${(ratioJwt * 100).toFixed(0)} %`,
          '>= 80 %',
          verdict(ratioJwt >= 0.8),
        ],
        ['added p50 (sequential)', `${added.toFixed(3)} ms`, '<= 0.5 ms', verdict(added <= 0.5)],
        [
          `RSS over ${done} requests${done < longTarget ? ` (scaled down from ${longTarget}: time budget)` : ''}`,
          `${rssBefore.toFixed(1)} → ${rssAfter.toFixed(1)} MB (${(rssAfter - rssBefore).toFixed(1)}; samples ${samples.map((s) => s.toFixed(0)).join(' ')})`,
          '± 20 MB',
          verdict(Math.abs(rssAfter - rssBefore) <= 20),
        ],
        // After the first batch V8 has sized its young generation for this allocation rate (a
        // one-off growth of heap capacity, not live data); drift from there on would be a leak.
        [
          `RSS after the first batch (warm) → end`,
          `${warm.toFixed(1)} → ${rssAfter.toFixed(1)} MB (${(rssAfter - warm).toFixed(1)})`,
          '± 20 MB',
          verdict(Math.abs(rssAfter - warm) <= 20),
        ],
        [
          `100 MB stream (${bytes} bytes, ${(bytes / 1048576 / secs).toFixed(0)} MB/s)`,
          `+${(peak - before100).toFixed(1)} MB peak RSS`,
          '<= 20 MB',
          verdict(bytes === 100 * 1024 * 1024 && peak - before100 <= 20),
        ],
      ],
    ),
  )
} finally {
  for (const c of cleanup.reverse()) await c()
}
