/**
 * `run --sandbox` (issue 32), side by side in one run, loopback only (about half a minute):
 *   - start: spawn the dependency-free stdio server (test/fixtures/mcp/sandbox-probe) and get its
 *     answer to `initialize`, unsandboxed vs in bubblewrap (profile `none`), 15 times each;
 *     target: median overhead ≤ 150 ms;
 *   - download: 100 MB from a local HTTP server with curl, directly vs from inside the sandbox
 *     through the egress proxy (profile allowing the server's port; curl uses HTTP_PROXY, and
 *     `--proxytunnel` for the CONNECT path, the one HTTPS takes), median of 5; target: ≥ 70% of
 *     direct. Every variant's body goes through the same pipe to `cat` (see `download`).
 *
 * Run: node_modules/.bin/node bench/sandbox.bench.ts   (or: npm run bench -- sandbox)
 */
import {spawn} from 'node:child_process'
import {join} from 'node:path'
import {createMemoryLogger} from '../src/lib/log/logger.ts'
import {builtinProfile, parsePermissionProfile} from '../src/lib/sandbox/profile.ts'
import {prepareSandbox, type PreparedSandbox} from '../src/lib/sandbox/sandbox.ts'
import {ROOT} from './helpers/processes.ts'
import {fmt, table} from './helpers/table.ts'

const PROBE = [process.execPath, join(ROOT, 'test/fixtures/mcp/sandbox-probe/index.js')]
const STARTS = Number(process.env.BENCH_STARTS ?? 15)
const MB = 100
const logger = createMemoryLogger('warn')

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** ms from spawn to the server's initialize answer. */
function startOnce(command: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    const child = spawn(command[0]!, command.slice(1), {env, stdio: ['pipe', 'pipe', 'inherit']})
    child.stdout.once('data', () => {
      resolve(performance.now() - t0)
      child.kill('SIGKILL')
    })
    child.on('error', reject)
    child.stdin.write(
      '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}\n',
    )
  })
}

/**
 * The download, as a shell line: curl writes the body to a pipe that `cat` empties into /dev/null
 * (the same work inside the sandbox and outside, where a file on one side and /dev/null on the
 * other would measure the file system), and its speed to stderr.
 */
function download(url: string, curlFlags = ''): string[] {
  const curl = `/usr/bin/curl -s ${curlFlags} -o - -w '%{stderr}%{speed_download}' ${url}`
  return ['/bin/sh', '-c', `${curl} | cat > /dev/null`]
}

/** MB/s of one curl download (`download`), started the way `run` starts a server (with its channel). */
function curl(run: Pick<PreparedSandbox, 'command' | 'env' | 'channel'>): Promise<number> {
  return new Promise((resolve, reject) => {
    const {command, env, channel} = run
    const child = spawn(command[0]!, command.slice(1), {
      env,
      stdio: ['ignore', 'ignore', 'pipe', ...(channel ? ['ipc' as const] : [])],
    })
    channel?.(child)
    let out = ''
    child.stderr!.on('data', (d) => (out += d))
    child.on('error', reject)
    child.on('exit', (code) => {
      const speed = Number(out.trim()) // bytes/s (curl's speed_download)
      if (code !== 0 || !speed) reject(new Error(`curl exited ${code}: ${out}`))
      else resolve(speed / 1e6)
    })
  })
}

// The download server is a process of its own: in this process it would share the event loop
// with the egress proxy, which runs here (prepareSandbox starts it in the calling process).
const payloadServer = spawn(
  process.execPath,
  [
    '-e',
    `const p=Buffer.alloc(1<<20,120);require('http').createServer((q,r)=>{r.writeHead(200,{'content-length':String(${MB}*p.length)});let l=${MB};const pump=()=>{while(l>0){l--;if(!r.write(p))return void r.once('drain',pump)}r.end()};pump()}).listen(0,'127.0.0.1',function(){console.log(this.address().port)})`,
  ],
  {stdio: ['ignore', 'pipe', 'inherit']},
)
const port = await new Promise<number>((resolve) =>
  payloadServer.stdout.once('data', (d) => resolve(Number(String(d)))),
)
const url = `http://127.0.0.1:${port}/big`

try {
  // Start overhead.
  const none = await prepareSandbox(
    PROBE,
    process.env,
    {workload: 'bench', profile: builtinProfile('none')},
    {logger},
  )
  const plain: number[] = []
  const boxed: number[] = []
  for (let i = 0; i < STARTS; i++) {
    plain.push(await startOnce(PROBE, process.env))
    boxed.push(await startOnce(none.command, none.env))
  }
  await none.close()

  // Download through the egress proxy.
  const profile = parsePermissionProfile(
    {network: {outbound: {allow_host: ['127.0.0.1'], allow_port: [port]}}},
    'bench',
    ROOT,
    process.env.HOME ?? '/',
  )
  const direct: number[] = []
  const boxedDirect: number[] = []
  // Attribution: the same sandbox with the host's network (no proxy).
  const viaHost = await prepareSandbox(
    download(url),
    process.env,
    {workload: 'bench3', profile: builtinProfile('network')},
    {logger},
  )
  const proxied: number[] = []
  const tunneled: number[] = []
  const viaProxy = await prepareSandbox(
    download(url),
    process.env,
    {workload: 'bench', profile},
    {logger},
  )
  const viaTunnel = await prepareSandbox(
    download(url, '--proxytunnel'),
    process.env,
    {workload: 'bench2', profile},
    {logger},
  )
  for (let i = 0; i < 5; i++) {
    direct.push(await curl({command: download(url), env: process.env}))
    boxedDirect.push(await curl(viaHost))
    proxied.push(await curl(viaProxy))
    tunneled.push(await curl(viaTunnel))
  }
  await viaProxy.close()
  await viaHost.close()
  await viaTunnel.close()

  const overhead = median(boxed) - median(plain)
  process.stdout.write(
    table(
      ['start (spawn → initialize answer)', 'p50 ms', 'min ms', 'max ms'],
      [
        ['unsandboxed', fmt(median(plain)), fmt(Math.min(...plain)), fmt(Math.max(...plain))],
        [
          'bubblewrap, profile none',
          fmt(median(boxed)),
          fmt(Math.min(...boxed)),
          fmt(Math.max(...boxed)),
        ],
      ],
    ) +
      `\nsandbox start overhead (median): ${fmt(overhead)} ms — target ≤ 150 ms: ${overhead <= 150 ? 'met' : 'NOT met'}\n\n`,
  )
  const ratio = (xs: number[]) => (100 * median(xs)) / median(direct)
  process.stdout.write(
    table(
      [`download ${MB} MB with curl`, 'MB/s (median of 5)', '% of direct'],
      [
        ['direct, outside', fmt(median(direct), 0), '100'],
        [
          'sandboxed, host network (no proxy)',
          fmt(median(boxedDirect), 0),
          fmt(ratio(boxedDirect), 0),
        ],
        [
          'sandboxed, via egress proxy (absolute URL)',
          fmt(median(proxied), 0),
          fmt(ratio(proxied), 0),
        ],
        [
          'sandboxed, via egress proxy (CONNECT)',
          fmt(median(tunneled), 0),
          fmt(ratio(tunneled), 0),
        ],
      ],
    ) +
      `\ntarget ≥ 70% of direct — CONNECT (HTTPS): ${ratio(tunneled) >= 70 ? 'met' : 'NOT met'}; absolute http:// URL: ${ratio(proxied) >= 70 ? 'met' : 'NOT met'}\n`,
  )
} finally {
  payloadServer.kill()
}
