/**
 * Audit trail and metrics cost (issue 35): `toolgate proxy` with `--audit-log FILE` and
 * `--internal-address` (metrics) against the same proxy with neither, in front of the same
 * JSON-RPC upstream, under the same load (autocannon, POST tools/call, 1,000 req/s each, 16
 * connections). Target: audit file + metrics on ≤ 10% more CPU time per request than both off.
 *
 * The figure is each proxy's CPU time per request (from /proc). This VM's CPU speed drifts by
 * ±30% over seconds, so the proxies are measured at the same moments: all run at once, pinned to
 * the same core (the load and the upstream to the other), each round's figure is divided by the
 * mean of two copies of the bare proxy in that round, and the loads start in a rotating order.
 * How far each copy sits from that mean shows what the method itself varies by. Fifteen rounds; medians are reported.
 *
 *   node_modules/.bin/node bench/audit.bench.ts
 */
import {execFileSync} from 'node:child_process'
import {mkdtempSync, rmSync, statSync} from 'node:fs'
import {availableParallelism, tmpdir} from 'node:os'
import {join} from 'node:path'
import {BODY, UPSTREAM} from './helpers/json-rpc-upstream.ts'
import {mcpPosts} from './helpers/load.ts'
import {cpuMicros, NODE, start, type Proc} from './helpers/processes.ts'
import {table} from './helpers/table.ts'

const dir = mkdtempSync(join(tmpdir(), 'toolgate-audit-bench-'))
const procs: Proc[] = []
const ROUNDS = 15
const RATE = 1000
const SECONDS = 4
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
// Pinning needs two cores and taskset; without them the proxies share whatever the OS gives.
const cores = availableParallelism()
const pin = (cpu: number, args: string[]) =>
  cores >= 2 ? {command: 'taskset', args: ['-c', String(cpu), NODE, ...args]} : {args}

// The load (this process) with the upstream, away from the proxies' core.
if (cores >= 2) execFileSync('taskset', ['-p', '-c', '0', String(process.pid)], {stdio: 'ignore'})

async function launch(cpu: number, args: string[]): Promise<Proc> {
  const {command, args: argv} = pin(cpu, args)
  const p = await start(argv, command ? {command} : {})
  procs.push(p)
  return p
}

const variants: [string, string[]][] = [
  ['both off', []],
  ['both off (second copy)', []],
  [
    'audit file + metrics',
    ['--audit-log', join(dir, 'audit.log'), '--internal-address', '127.0.0.1:0'],
  ],
]

try {
  const upstream = await launch(0, ['--input-type=module', '-e', UPSTREAM])
  const target = `http://127.0.0.1:${upstream.ready.port}`
  const proxies: Proc[] = []
  for (const [, extra] of variants)
    proxies.push(
      await launch(cores - 1, [
        'bin/dev.js',
        'proxy',
        'bench',
        '--json',
        '--target-uri',
        target,
        ...extra,
      ]),
    )
  const drive = (p: Proc, seconds: number) =>
    mcpPosts(String(p.ready.url), {connections: 16, seconds, body: BODY, rate: RATE})
  await Promise.all(proxies.map((p) => drive(p, 3))) // warm-up (JIT, connections), not measured
  const cpu: number[][] = variants.map(() => [])
  const rps: number[][] = variants.map(() => [])
  for (let round = 0; round < ROUNDS; round++) {
    const before = proxies.map((p) => cpuMicros(p.child.pid!))
    // Each round starts the loads in another order: none is always first to be driven.
    const order = proxies.map((_, i) => (i + round) % proxies.length)
    const started = order.map((i) => drive(proxies[i]!, SECONDS))
    const results: Awaited<ReturnType<typeof drive>>[] = []
    for (const [k, i] of order.entries()) results[i] = await started[k]!
    proxies.forEach((p, i) => {
      cpu[i]!.push((cpuMicros(p.child.pid!) - before[i]!) / Math.max(1, results[i]!.requests))
      rps[i]!.push(results[i]!.rps)
    })
  }
  // The baseline of a round: the mean of the two bare copies (each copy's distance from it is
  // what the method varies by).
  const ratio = (i: number) =>
    median(cpu[i]!.map((c, round) => c / ((cpu[0]![round]! + cpu[1]![round]!) / 2)))
  const percent = (r: number) => `${r >= 1 ? '+' : ''}${((r - 1) * 100).toFixed(1)}%`
  process.stdout.write(
    table(
      ['proxy', 'CPU µs/request (median)', 'req/s (median)', 'vs both off (median of rounds)'],
      variants.map(([name], i) => [
        name,
        median(cpu[i]!).toFixed(1),
        Math.round(median(rps[i]!)),
        percent(ratio(i)),
      ]),
    ) + '\n',
  )
  const size = statSync(join(dir, 'audit.log')).size / 1024 / 1024
  process.stdout.write(
    `${ROUNDS} rounds of ${SECONDS} s at ${RATE} req/s each; audit file: ${size.toFixed(1)} MiB written; target audit file + metrics ≤ +10% CPU per request: ${ratio(2) <= 1.1 ? 'met' : 'NOT met'}\n`,
  )
} finally {
  for (const p of procs.reverse()) await p.stop()
  rmSync(dir, {recursive: true, force: true})
}
