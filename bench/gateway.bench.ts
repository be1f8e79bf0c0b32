/**
 * `toolgate gateway` (issue 37). Loopback only, about a minute. Every workload and gateway is its
 * own detached process (bin/dev.js, isolated XDG dirs); the MCP SDK client in this process is the
 * load generator.
 *
 * Calls: the same server-everything `echo` (a stdio workload, `ev`), straight to the workload and
 * through a gateway whose backends are ev and three 100-tool workloads — three rounds side by
 * side, sequential, one client each; the median of the three p50s per path. The gateway adds a
 * second front (its pipeline), its router and one more loopback HTTP hop. Also the CPU per call of
 * the gateway process (/proc, its supervisorPid).
 *
 * Lists: tools/list of 3 × 100 tools merged (three workloads of bench/helpers/many-tools-server.ts)
 * — with backends that promise list_changed (the gateway keeps each session's lists) and with
 * backends that do not (every tools/list asks all three) — beside tools/list of one 100-tool
 * workload directly.
 *
 * Targets: added p50 ≤ 1 ms per tools/call; merged tools/list of 3 × 100 tools ≤ 5 ms p50.
 *
 * Run: node_modules/.bin/node bench/gateway.bench.ts   (or: npm run bench -- gateway)
 *   env: BENCH_SEQUENTIAL=2000 BENCH_LISTS=500
 */
import {execFileSync} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {cpuMicros, NODE, ROOT} from './helpers/processes.ts'
import {fmt, table} from './helpers/table.ts'

const CALLS = Number(process.env.BENCH_SEQUENTIAL ?? 2_000)
const LISTS = Number(process.env.BENCH_LISTS ?? 500)
const EVERYTHING = join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js')
const MANY = join(ROOT, 'bench/helpers/many-tools-server.ts')

const home = mkdtempSync(join(tmpdir(), 'toolgate-bench-gateway-'))
const env = {
  ...process.env,
  HOME: home,
  XDG_CONFIG_HOME: join(home, 'config'),
  XDG_DATA_HOME: join(home, 'data'),
  XDG_STATE_HOME: join(home, 'state'),
}
const cli = (args: string[]) =>
  execFileSync(NODE, ['bin/dev.js', ...args], {cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe']})
const state = (name: string) =>
  JSON.parse(readFileSync(join(home, 'state/toolgate/workloads', `${name}.json`), 'utf8')) as {
    url: string
    supervisorPid: number
  }

async function connect(url: string): Promise<Client> {
  const client = new Client({name: 'bench', version: '1'})
  await client.connect(new StreamableHTTPClientTransport(new URL(url)))
  return client
}

/** A streamable HTTP session by hand: initialize, then tools/list answers parsed as JSON only. */
async function rawSession(url: string): Promise<{listTools(): Promise<number>}> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  }
  const post = async (body: unknown) => {
    const res = await fetch(url, {method: 'POST', headers, body: JSON.stringify(body)})
    return {res, text: await res.text()}
  }
  const init = await post({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: {name: 'raw', version: '1'},
    },
  })
  headers['mcp-session-id'] = init.res.headers.get('mcp-session-id') ?? ''
  headers['mcp-protocol-version'] = '2025-06-18'
  await post({jsonrpc: '2.0', method: 'notifications/initialized'})
  let id = 1
  return {
    async listTools() {
      const {text} = await post({jsonrpc: '2.0', id: id++, method: 'tools/list', params: {}})
      // A JSON body, or one SSE event whose data is the answer.
      const json = text.startsWith('{') ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? '{}')
      return ((JSON.parse(json) as {result?: {tools?: unknown[]}}).result?.tools ?? []).length
    },
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

async function timed(count: number, once: (i: number) => Promise<unknown>): Promise<number[]> {
  const times: number[] = []
  for (let i = 0; i < count; i++) {
    const t0 = performance.now()
    await once(i)
    times.push(performance.now() - t0)
  }
  return times.sort((a, b) => a - b)
}
const p = (sorted: number[], q: number) => sorted[Math.floor(sorted.length * q)]!

try {
  cli(['run', 'ev', '--', NODE, EVERYTHING, 'stdio'])
  for (const i of [1, 2, 3]) {
    cli(['run', `t${i}`, '-e', 'LIST_CHANGED=1', '--', NODE, MANY])
    cli(['run', `u${i}`, '-e', 'LIST_CHANGED=0', '--', NODE, MANY])
  }
  cli(['gateway', 'gw', '--backend', 'ev', '--backend', 't1', '--backend', 't2', '--backend', 't3'])
  cli(['gateway', 'gw-nocache', '--backend', 'u1', '--backend', 'u2', '--backend', 'u3'])

  const direct = await connect(state('ev').url)
  const through = await connect(state('gw').url)
  const gatewayPid = state('gw').supervisorPid
  const echo = (client: Client, name: string) => (i: number) =>
    client.callTool({name, arguments: {message: `m${i}`}})
  // Warm-up: JIT, connections, the gateway's backend sessions.
  await timed(200, echo(direct, 'echo'))
  await timed(200, echo(through, 'ev__echo'))
  const rounds: Array<{direct: number[]; gateway: number[]; cpu: number}> = []
  for (let r = 0; r < 3; r++) {
    const d = await timed(CALLS, echo(direct, 'echo'))
    const cpu0 = cpuMicros(gatewayPid)
    const g = await timed(CALLS, echo(through, 'ev__echo'))
    rounds.push({direct: d, gateway: g, cpu: (cpuMicros(gatewayPid) - cpu0) / CALLS})
  }
  const dP50 = median(rounds.map((r) => p(r.direct, 0.5)))
  const gP50 = median(rounds.map((r) => p(r.gateway, 0.5)))
  process.stdout.write(
    `tools/call echo, ${CALLS} sequential calls × 3 rounds (median of the round p50s)\n`,
  )
  process.stdout.write(
    table(
      ['path', 'p50 ms', 'p99 ms', 'gateway CPU µs/call'],
      [
        [
          'straight to the workload (baseline)',
          fmt(dP50, 3),
          fmt(median(rounds.map((r) => p(r.direct, 0.99))), 3),
          '-',
        ],
        [
          'through the gateway',
          fmt(gP50, 3),
          fmt(median(rounds.map((r) => p(r.gateway, 0.99))), 3),
          fmt(median(rounds.map((r) => r.cpu)), 0),
        ],
      ],
    ) + '\n',
  )
  const added = gP50 - dP50
  process.stdout.write(
    `added p50: ${fmt(added, 3)} ms (target ≤ 1 ms: ${added <= 1 ? 'met' : 'NOT met'})\n\n`,
  )

  // Two clients per path: the MCP SDK's (what an application sees, its own validation of every
  // tool included) and a plain HTTP client that only parses the JSON (what the server side costs).
  const evTools = (await direct.listTools()).tools.length
  const rows: Array<[string, number[], number[]]> = []
  for (const [label, name, expected] of [
    ['one workload, 100 tools, direct (baseline)', 't1', 100],
    ['gateway, 3 × 100 + ev, backends promise list_changed', 'gw', 300 + evTools],
    ['gateway, 3 × 100, backends do not (asked every time)', 'gw-nocache', 300],
  ] as const) {
    const sdk = await connect(state(name).url)
    const raw = await rawSession(state(name).url)
    const viaSdk = async () => {
      const {tools} = await sdk.listTools()
      if (tools.length !== expected) throw new Error(`listed ${tools.length}, expected ${expected}`)
    }
    const viaRaw = async () => {
      const n = await raw.listTools()
      if (n !== expected) throw new Error(`listed ${n}, expected ${expected}`)
    }
    await timed(50, viaSdk)
    await timed(50, viaRaw)
    rows.push([label, await timed(LISTS, viaSdk), await timed(LISTS, viaRaw)])
    await sdk.close()
  }
  process.stdout.write(`tools/list, ${LISTS} sequential lists\n`)
  process.stdout.write(
    table(
      ['path', 'SDK client p50 ms', 'p99 ms', 'HTTP client p50 ms', 'p99 ms'],
      rows.map(([label, s, r]) => [
        label,
        fmt(p(s, 0.5), 3),
        fmt(p(s, 0.99), 3),
        fmt(p(r, 0.5), 3),
        fmt(p(r, 0.99), 3),
      ]),
    ) + '\n',
  )
  const merged = Math.max(p(rows[1]![2], 0.5), p(rows[2]![2], 0.5))
  process.stdout.write(
    `merged tools/list p50, HTTP client (worse of the two): ${fmt(merged, 3)} ms (target ≤ 5 ms: ${merged <= 5 ? 'met' : 'NOT met'})\n`,
  )
  for (const c of [direct, through]) await c.close()
} finally {
  try {
    cli(['stop', '--all'])
  } catch {
    // Reported by the stop itself; the directory goes anyway.
  }
  rmSync(home, {recursive: true, force: true})
}
