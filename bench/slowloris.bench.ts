/**
 * `toolgate proxy` under a slowloris attack (issue: hardening). Loopback only, about 40 s.
 *
 * Same upstream (a tiny node:http JSON-RPC responder in its own process) and the real proxy command
 * (bin/dev.js, its own process). Normal load: autocannon POSTs from this process. Two runs side by
 * side: the normal load alone, then the same load while 200 attacker connections trickle one header
 * byte every 2 s and never finish their request head. Reported: req/s, p50/p99, errors and non-2xx,
 * how many attacker sockets the proxy closed (headersTimeout, 20 s), and whether the proxy logged
 * EMFILE. Target: p99 under attack within 2x of the quiet run, no EMFILE, no 502.
 *
 * Run: node_modules/.bin/node bench/slowloris.bench.ts [--seconds 8] [--attackers 200]
 */
import {spawn, type ChildProcess} from 'node:child_process'
import {createRequire} from 'node:module'
import {connect, type Socket} from 'node:net'
import {setTimeout as sleep} from 'node:timers/promises'
import {parseArgs} from 'node:util'
import {NODE, ROOT} from './helpers/processes.ts'
import {fmt, table} from './helpers/table.ts'

type Autocannon = (opts: Record<string, unknown>) => Promise<{
  requests: {average: number; total: number}
  latency: {p50: number; p99: number}
  errors: number
  timeouts: number
  non2xx: number
  statusCodeStats: Record<string, {count: number}>
}>
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon

const {values} = parseArgs({
  options: {seconds: {type: 'string', default: '8'}, attackers: {type: 'string', default: '200'}},
})
const seconds = Math.min(Number(values.seconds), 30)
const attackers = Math.min(Number(values.attackers), 2000)

const UPSTREAM = `
import {createServer} from 'node:http'
const s = createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    res.writeHead(200, {'content-type': 'application/json'})
    res.end('{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}')
  })
})
s.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({port: s.address().port}) + '\\n'))
`

const children: ChildProcess[] = []
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')))

function spawnReady(args: string[], pick: (line: string) => string | undefined) {
  const child = spawn(NODE, args, {cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe']})
  children.push(child)
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  return new Promise<{child: ChildProcess; value: string; stderr: () => string}>(
    (resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not ready: ${stderr}`)), 60_000)
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        const value = pick(d)
        if (value) {
          clearTimeout(timer)
          resolve({child, value, stderr: () => stderr})
        }
      })
    },
  )
}

const upstream = await spawnReady(
  ['--input-type=module', '-e', UPSTREAM],
  (d) => /"port":(\d+)/.exec(d)?.[1],
)
const proxy = await spawnReady(
  ['bin/dev.js', 'proxy', 'bench', '--target-uri', `http://127.0.0.1:${upstream.value}`, '--json'],
  (d) => /"url":"(http:\/\/[^"]+)"/.exec(d)?.[1],
)
const url = proxy.value + '/mcp'
const body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}'

async function load() {
  const opts = {
    url,
    method: 'POST',
    body,
    headers: {'content-type': 'application/json'},
    connections: 10,
  }
  await autocannon({...opts, duration: 1})
  return autocannon({...opts, duration: seconds})
}

/** Opens attacker sockets that send a request head one byte at a time and never finish it. */
function attack(n: number) {
  const port = Number(new URL(proxy.value).port)
  const sockets: Socket[] = []
  let closedByProxy = 0
  let stopped = false
  for (let i = 0; i < n; i++) {
    const s = connect(port, '127.0.0.1')
    s.on('error', () => undefined)
    s.on('close', () => {
      if (!stopped) closedByProxy++
    })
    s.write('POST /mcp HTTP/1.1\r\nhost: x\r\nx-slow: ')
    sockets.push(s)
  }
  const trickle = setInterval(() => sockets.forEach((s) => s.writable && s.write('a')), 2000)
  return {
    closed: () => closedByProxy,
    stop() {
      stopped = true
      clearInterval(trickle)
      sockets.forEach((s) => s.destroy())
    },
  }
}

const quiet = await load()
const siege = attack(attackers)
await sleep(500)
const attacked = await load()
// Hold the attack past the proxy's 20 s head timeout (checked every 5 s) to see it reclaim the sockets.
await sleep(Math.max(0, 30_000 - seconds * 1000 - 1500))
const reclaimed = siege.closed()
siege.stop()

const row = (name: string, r: Awaited<ReturnType<typeof load>>) => [
  name,
  fmt(r.requests.average, 0),
  fmt(r.latency.p50, 1),
  fmt(r.latency.p99, 1),
  r.errors + r.timeouts,
  r.non2xx,
  r.statusCodeStats['502']?.count ?? 0,
]
process.stdout.write(
  table(
    ['case (10 normal connections)', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'non-2xx', '502'],
    [row('proxy, no attack', quiet), row(`proxy, ${attackers} slowloris sockets`, attacked)],
  ) + '\n',
)
const ratio = attacked.latency.p99 / Math.max(quiet.latency.p99, 1)
const emfile = /EMFILE/.test(proxy.stderr())
process.stdout.write(
  `p99 under attack: ${fmt(ratio, 2)}x the quiet run (target <= 2x); attacker sockets closed by the proxy within 30 s: ${reclaimed}/${attackers}; EMFILE in the proxy log: ${emfile ? 'YES' : 'no'}\n`,
)
proxy.child.kill('SIGTERM')
upstream.child.kill('SIGTERM')
