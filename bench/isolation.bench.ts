/**
 * `toolgate run --isolation` (issue 30): what a process per caller costs next to one shared
 * process. Loopback only, bounded (about a minute). One run, side by side, the same workload
 * (server-everything over stdio, incoming OIDC from an in-process oidc-provider) started twice —
 * `--isolation shared` (the baseline) and `--isolation principal` — each driven by 8 MCP SDK
 * clients, one per principal (8 subjects), from this process:
 *   - connect: initialize of each principal's first session (in `principal` mode the first one
 *     gets the process started with the workload, the 7 others a new process), p50 and max;
 *   - calls/s: `echo` with 16 calls in flight over the 8 clients for BENCH_SECONDS (default 8);
 *   - memory: VmRSS of the workload process plus every server process under it, after the load.
 *
 * Run: node_modules/.bin/node bench/isolation.bench.ts   (or: npm run bench -- isolation)
 */
import {execFileSync} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {startOidcProvider} from '../test/helpers/oidc-provider.ts'
import {concurrentCalls} from './helpers/mcp-calls.ts'
import {start, type Proc} from './helpers/processes.ts'
import {fmt, table} from './helpers/table.ts'

const PRINCIPALS = 8
const SECONDS = Math.min(Number(process.env.BENCH_SECONDS ?? 8), 60)
const EVERYTHING = 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'

const rssMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024

/** The process and every descendant (server processes, what npx started). */
function tree(pid: number): number[] {
  const out = [pid]
  for (let i = 0; i < out.length; i++) {
    let children = ''
    try {
      children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(out[i])], {encoding: 'utf8'})
    } catch {
      // no children
    }
    for (const c of children.split('\n')) if (c.trim()) out.push(Number(c))
  }
  return out
}

const idp = await startOidcProvider()
const tokens = await Promise.all(
  Array.from({length: PRINCIPALS}, (_, i) => idp.issueAccessToken({sub: `user-${i}`})),
)

interface Row {
  mode: string
  connectP50: number
  connectMax: number
  perSecond: number
  errors: number
  processes: number
  rss: number
}

async function measure(mode: 'shared' | 'principal'): Promise<Row> {
  const home = mkdtempSync(join(tmpdir(), 'tg-bench-iso-'))
  let workload: Proc | undefined
  const clients: Client[] = []
  try {
    workload = await start(
      [
        'bin/dev.js',
        'run',
        `iso-${mode}`,
        '--foreground',
        '--json',
        '--isolation',
        mode,
        '--oidc-issuer',
        idp.issuer,
        '--oidc-audience',
        idp.audience,
        '--',
        process.execPath,
        EVERYTHING,
        'stdio',
      ],
      {
        env: {
          PATH: process.env.PATH,
          HOME: home,
          XDG_STATE_HOME: join(home, 'state'),
          XDG_DATA_HOME: join(home, 'data'),
          XDG_CONFIG_HOME: join(home, 'config'),
        },
      },
    )
    const url = String(workload.ready.url)
    const connects: number[] = []
    for (const token of tokens) {
      const client = new Client({name: 'bench', version: '1'})
      const t0 = performance.now()
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url), {
          requestInit: {headers: {authorization: `Bearer ${token}`}},
        }),
      )
      await client.callTool({name: 'echo', arguments: {message: 'first'}})
      connects.push(performance.now() - t0)
      clients.push(client)
    }
    const load = await concurrentCalls(clients, 16, SECONDS * 1000)
    const pids = tree(workload.child.pid!)
    const rss = pids.reduce((sum, p) => sum + (rssMb(p) || 0), 0)
    const sorted = [...connects].sort((a, b) => a - b)
    return {
      mode,
      connectP50: sorted[Math.floor(sorted.length / 2)]!,
      connectMax: sorted.at(-1)!,
      perSecond: load.perSecond,
      errors: load.errors,
      processes: pids.length - 1,
      rss,
    }
  } finally {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)))
    await workload?.stop()
    rmSync(home, {recursive: true, force: true})
  }
}

try {
  const rows = [await measure('shared'), await measure('principal')]
  process.stdout.write(
    table(
      [
        'isolation',
        'first call p50 ms',
        'first call max ms',
        'calls/s (16 in flight)',
        'errors',
        'server processes',
        'RSS total MB',
      ],
      rows.map((r) => [
        r.mode,
        fmt(r.connectP50),
        fmt(r.connectMax),
        fmt(r.perSecond, 0),
        r.errors,
        r.processes,
        fmt(r.rss, 0),
      ]),
    ) + '\n',
  )
  process.stdout.write(
    `${PRINCIPALS} principals, one client each; "first call" = initialize + one echo of a principal's first session (principal mode: a server process starts for it, except the first caller, who gets the one started with the workload).\n`,
  )
} finally {
  await idp.close()
}
