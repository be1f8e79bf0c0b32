/**
 * Audit trail cost (issue 35): `toolgate proxy` with and without `--audit-log FILE` in front of the
 * same JSON-RPC upstream, side by side in one run, under the same load (autocannon, POST
 * tools/call) at one fixed rate (1,500 req/s, which both sustain). The figure that holds on this
 * shared 2-core machine is the proxy process's CPU time per request (from /proc); req/s swings ±30%. Each pair runs three times, alternating, and the
 * median is reported. Target: audit on ≤ 10% more CPU per request than off.
 *
 *   node_modules/.bin/node bench/audit.bench.ts
 */
import {mkdtempSync, rmSync, statSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {BODY, UPSTREAM} from './helpers/json-rpc-upstream.ts'
import {load} from './helpers/load.ts'
import {cpuMicros, start, type Proc} from './helpers/processes.ts'
import {table} from './helpers/table.ts'

const dir = mkdtempSync(join(tmpdir(), 'toolgate-audit-bench-'))
const procs: Proc[] = []
const RATE = 1500
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

async function proxy(target: string, extra: string[]): Promise<Proc> {
  const p = await start([
    'bin/dev.js',
    'proxy',
    'bench',
    '--json',
    '--target-uri',
    target,
    ...extra,
  ])
  procs.push(p)
  return p
}

async function cell(p: Proc): Promise<{cpuUs: number; rps: number}> {
  const url = String(p.ready.url)
  const pid = p.child.pid!
  const before = cpuMicros(pid)
  const r = await load(url, {
    connections: 32,
    seconds: 4,
    headers: {'content-type': 'application/json', accept: 'application/json, text/event-stream'},
    body: BODY,
    // The same offered load for both: CPU per request depends on the load (how many requests
    // share an event-loop turn), so both are measured at one fixed rate they both sustain.
    rate: RATE,
  })
  // load() warms up for 1 s before its 4 s: CPU is read around both, so count ~5/4 of the requests.
  return {cpuUs: (cpuMicros(pid) - before) / Math.max(1, r.requests * 1.25), rps: r.rps}
}

try {
  const upstream = await start(['--input-type=module', '-e', UPSTREAM])
  procs.push(upstream)
  const target = `http://127.0.0.1:${upstream.ready.port}`
  const file = join(dir, 'audit.log')
  const off = await proxy(target, [])
  const on = await proxy(target, ['--audit-log', file])
  const runs: Record<string, {cpu: number[]; rps: number[]}> = {
    off: {cpu: [], rps: []},
    on: {cpu: [], rps: []},
  }
  for (let i = 0; i < 3; i++) {
    for (const [name, p] of [
      ['off', off],
      ['on', on],
    ] as const) {
      const r = await cell(p)
      runs[name]!.cpu.push(r.cpuUs)
      runs[name]!.rps.push(r.rps)
    }
  }
  const offCpu = median(runs.off!.cpu)
  const onCpu = median(runs.on!.cpu)
  const extra = (onCpu / offCpu - 1) * 100
  process.stdout.write(
    table(
      ['proxy', 'CPU µs/request (median of 3)', 'req/s (median)', 'vs off'],
      [
        ['audit off', offCpu.toFixed(1), Math.round(median(runs.off!.rps)), '-'],
        [
          'audit on (file)',
          onCpu.toFixed(1),
          Math.round(median(runs.on!.rps)),
          `${extra >= 0 ? '+' : ''}${extra.toFixed(1)}%`,
        ],
      ],
    ) + '\n',
  )
  process.stdout.write(
    `audit file: ${(statSync(file).size / 1024 / 1024).toFixed(1)} MiB written; target ≤ +10% CPU per request: ${extra <= 10 ? 'met' : 'NOT met'}\n`,
  )
} finally {
  for (const p of procs.reverse()) await p.stop()
  rmSync(dir, {recursive: true, force: true})
}
