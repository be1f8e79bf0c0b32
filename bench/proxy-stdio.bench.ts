/**
 * `toolgate proxy stdio` vs `mcp-remote` (issue 12), side by side in one run against the same
 * server-everything over streamable HTTP, each driven by the MCP SDK client over stdio as a desktop
 * client drives it. Reported: start-to-first-answer (spawn → initialize → first tools/call),
 * sequential tools/call per second, throughput with 32 calls in flight, peak RSS of the relay
 * process. Targets: ≥ 1.3× mcp-remote on both rates, lower RSS, first answer no later.
 *
 * Run: node_modules/.bin/node bench/proxy-stdio.bench.ts
 */
import {spawn} from 'node:child_process'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StdioClientTransport} from '@modelcontextprotocol/sdk/client/stdio.js'
import {concurrentCalls, sequentialCalls} from './helpers/mcp-calls.ts'
import {NODE, peakRssMb, ROOT} from './helpers/processes.ts'
import {fmt, table} from './helpers/table.ts'

const SEQUENTIAL = 1_000
const SECONDS = 8
const port = 30_000 + Math.floor(Math.random() * 20_000)
const server = spawn(
  NODE,
  [
    join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'),
    'streamableHttp',
  ],
  {
    env: {...process.env, PORT: String(port)},
    stdio: 'ignore',
  },
)
const home = mkdtempSync(join(tmpdir(), 'toolgate-bench-stdio-'))
process.on('exit', () => {
  server.kill('SIGKILL')
  rmSync(home, {recursive: true, force: true})
})
for (let i = 0; i < 100; i++) {
  if (
    // Bounded: a GET the server holds open as a stream must not stall the bench.
    await fetch(`http://127.0.0.1:${port}/mcp`, {signal: AbortSignal.timeout(1_000)}).then(
      () => true,
      () => false,
    )
  )
    break
  await new Promise((r) => setTimeout(r, 100))
}
const url = `http://127.0.0.1:${port}/mcp`
const env = {
  PATH: `${join(ROOT, 'node_modules/.bin')}:${process.env.PATH}`,
  HOME: home,
  XDG_STATE_HOME: join(home, 'state'),
  XDG_CONFIG_HOME: join(home, 'config'),
  XDG_DATA_HOME: join(home, 'data'),
  MCP_REMOTE_CONFIG_DIR: join(home, 'mcp-remote'),
}
const relays: Record<string, string[]> = {
  'mcp-remote 0.15 (baseline)': [
    join(ROOT, 'node_modules/mcp-remote/dist/proxy.js'),
    url,
    '--allow-http',
    '--transport',
    'http-only',
  ],
  // bin/run.js: the built dist/ as users run it (npm package), the sources when it is not built.
  'toolgate proxy stdio': [join(ROOT, 'bin/run.js'), 'proxy', 'stdio', url],
}

const rows: (string | number)[][] = []
const figures: Record<string, {seq: number; conc: number; rss: number; first: number}> = {}
for (const [name, args] of Object.entries(relays)) {
  const t0 = performance.now()
  const transport = new StdioClientTransport({
    command: NODE,
    args,
    env,
    stderr: 'ignore',
    cwd: ROOT,
  })
  const client = new Client({name: 'bench', version: '1'})
  await client.connect(transport)
  await client.callTool({name: 'echo', arguments: {message: 'first'}})
  const first = performance.now() - t0
  await sequentialCalls(client, 100)
  const seq = await sequentialCalls(client, SEQUENTIAL)
  const conc = await concurrentCalls([client], 32, SECONDS * 1000)
  const rss = peakRssMb(transport.pid!)
  await client.close()
  figures[name] = {seq: seq.perSecond, conc: conc.perSecond, rss, first}
  rows.push([
    name,
    fmt(first, 0),
    fmt(seq.p50, 2),
    fmt(seq.perSecond, 0),
    fmt(conc.perSecond, 0),
    conc.errors,
    fmt(rss),
  ])
}
console.log(
  table(
    [
      'relay',
      'first answer ms',
      'seq p50 ms',
      'seq calls/s',
      '32 in flight calls/s',
      'errors',
      'peak RSS MB',
    ],
    rows,
  ),
)
const [base, ours] = Object.values(figures) as [(typeof figures)[string], (typeof figures)[string]]
console.log(
  `\ntoolgate / mcp-remote: sequential ${fmt(ours.seq / base.seq, 2)}×, 32 in flight ${fmt(ours.conc / base.conc, 2)}× (targets ≥ 1.3×); RSS ${fmt(ours.rss)} vs ${fmt(base.rss)} MB; first answer ${fmt(ours.first, 0)} vs ${fmt(base.first, 0)} ms`,
)
