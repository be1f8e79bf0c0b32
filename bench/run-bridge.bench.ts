/**
 * `toolgate run`'s stdio bridge (issue 11). One run, side by side, the same server-everything
 * `echo` tool: the MCP SDK client straight over stdio (the baseline) vs through `run` (streamable
 * HTTP → proxy pipeline → bridge → stdio). The workload is its own process (`run --foreground`);
 * the clients are in this process. Targets: added p50 ≤ 1 ms at 1 client; ≥ 2,000 calls/s with 16
 * sessions; workload RSS ≤ 80 MB and no growth over many calls (BENCH_CALLS, default 20,000).
 *
 * Run: node_modules/.bin/node bench/run-bridge.bench.ts
 */
import {spawn} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StdioClientTransport} from '@modelcontextprotocol/sdk/client/stdio.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {concurrentCalls, rssMb, sequentialCalls} from './helpers/mcp-calls.ts'
import {NODE, ROOT} from './helpers/processes.ts'
import {fmt, table} from './helpers/table.ts'

const SEQUENTIAL = 2_000
const SECONDS = 8
const SOAK = Number(process.env.BENCH_CALLS ?? 20_000)
const SERVER = [
  NODE,
  join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'),
  'stdio',
]

const home = mkdtempSync(join(tmpdir(), 'toolgate-bench-run-'))
const env = {
  ...process.env,
  HOME: home,
  XDG_STATE_HOME: join(home, 'state'),
  XDG_CONFIG_HOME: join(home, 'config'),
  XDG_DATA_HOME: join(home, 'data'),
}
const workload = spawn(
  NODE,
  [join(ROOT, 'bin/dev.js'), 'run', 'bench', '--foreground', '--json', '--', ...SERVER],
  {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'ignore'],
  },
)
process.on('exit', () => {
  workload.kill('SIGKILL')
  rmSync(home, {recursive: true, force: true})
})
const url = await new Promise<string>((resolve, reject) => {
  let out = ''
  workload.stdout.on('data', (d: Buffer) => {
    out += d.toString()
    const line = out.split('\n').find((l) => l.startsWith('{'))
    if (line) resolve((JSON.parse(line) as {url: string}).url)
  })
  workload.once('exit', (code) => reject(new Error(`run exited ${code}`)))
})
const pid = (
  JSON.parse(readFileSync(join(home, 'state/toolgate/workloads/bench.json'), 'utf8')) as {
    supervisorPid: number
  }
).supervisorPid

const direct = new Client({name: 'bench', version: '1'})
await direct.connect(
  new StdioClientTransport({command: SERVER[0]!, args: SERVER.slice(1), stderr: 'ignore'}),
)
const httpClient = async () => {
  const c = new Client({name: 'bench', version: '1'})
  await c.connect(new StreamableHTTPClientTransport(new URL(url)))
  return c
}
const viaRun = await httpClient()
const rssStart = await rssMb(pid)

// Warm-up, then the same sequence on each path.
await sequentialCalls(direct, 200)
await sequentialCalls(viaRun, 200)
const seqDirect = await sequentialCalls(direct, SEQUENTIAL)
const seqRun = await sequentialCalls(viaRun, SEQUENTIAL)
const rssWarm = await rssMb(pid)

const sessions = await Promise.all(Array.from({length: 16}, httpClient))
const concDirect = await concurrentCalls([direct], 16, SECONDS * 1000)
const concRun = await concurrentCalls(sessions, 16, SECONDS * 1000)

// Soak: many calls over the 16 sessions, RSS before and after.
let soaked = 0
const soakStart = performance.now()
while (soaked < SOAK) {
  await Promise.all(sessions.map((c) => c.callTool({name: 'echo', arguments: {message: 's'}})))
  soaked += sessions.length
}
const soakSeconds = (performance.now() - soakStart) / 1000
const rssEnd = await rssMb(pid)

console.log(
  table(
    ['path', 'seq p50 ms', 'seq p99 ms', 'seq calls/s', '16 sessions calls/s', 'errors'],
    [
      [
        'direct stdio (SDK, baseline)',
        fmt(seqDirect.p50, 2),
        fmt(seqDirect.p99, 2),
        fmt(seqDirect.perSecond, 0),
        fmt(concDirect.perSecond, 0),
        concDirect.errors,
      ],
      [
        'toolgate run (streamable HTTP)',
        fmt(seqRun.p50, 2),
        fmt(seqRun.p99, 2),
        fmt(seqRun.perSecond, 0),
        fmt(concRun.perSecond, 0),
        concRun.errors,
      ],
    ],
  ),
)
console.log(
  `\nadded p50: ${fmt(seqRun.p50 - seqDirect.p50, 2)} ms (target ≤ 1 ms); 16 sessions: ${fmt(concRun.perSecond, 0)} calls/s (target ≥ 2000)`,
)
console.log(
  `workload RSS: ${fmt(rssStart)} MB at start, ${fmt(rssWarm)} MB warm, ${fmt(rssEnd)} MB after ${soaked} more calls in ${fmt(soakSeconds)} s (target ≤ 80 MB, no growth)`,
)
for (const c of [direct, viaRun, ...sessions]) await c.close().catch(() => undefined)
workload.kill('SIGTERM')
