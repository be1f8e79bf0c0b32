/**
 * Relates readers' slow requests during a sync to what the serve process was doing
 * (bench/helpers/serve-probe.ts lines): per sync phase, how many requests started in it, how many
 * were slow, and of those how many overlapped an event-loop stall or a GC pause of the process.
 */
import {fmt, table} from './table.ts'

interface Block {
  kind: 'stall' | 'gc'
  from: number
  to: number
  ms: number
}

/** `requests`: [epoch-ms start, latency ms] of each request; `lines`: the process's stderr lines. */
export function attributeSlowRequests(
  requests: Array<[number, number]>,
  lines: string[],
  slowMs: number,
): string {
  const events = lines
    .filter((l) => l.startsWith('PROBE '))
    .map((l) => JSON.parse(l.slice(6)) as {k: string; name?: string; ms?: number; t: number})
  const phases = events.filter((e) => e.k === 'phase') as Array<{name: string; t: number}>
  const blocks: Block[] = events
    .filter((e) => e.k === 'stall' || e.k === 'gc')
    .map((e) => {
      const ms = e.ms ?? 0
      // A stall is reported when it ends; a GC pause when it starts.
      return e.k === 'gc'
        ? {kind: 'gc', from: e.t, to: e.t + ms, ms}
        : {kind: 'stall', from: e.t - ms, to: e.t, ms}
    })
  const phaseAt = (t: number) => phases.findLast((p) => p.t <= t)?.name ?? 'before'
  const rows = new Map<
    string,
    {n: number; slow: number; stall: number; gc: number; worst: number[]}
  >()
  const row = (name: string) => {
    let r = rows.get(name)
    if (!r) rows.set(name, (r = {n: 0, slow: 0, stall: 0, gc: 0, worst: []}))
    return r
  }
  row('before')
  for (const p of phases) row(p.name)
  for (const [start, latency] of requests) {
    const r = row(phaseAt(start))
    r.n++
    if (latency <= slowMs) continue
    r.slow++
    const hit = blocks.filter((b) => b.from < start + latency && b.to > start)
    if (hit.some((b) => b.kind === 'stall')) r.stall++
    if (hit.some((b) => b.kind === 'gc')) r.gc++
  }
  for (const b of blocks) if (b.kind === 'stall') row(phaseAt(b.from)).worst.push(b.ms)
  const lasted = (name: string) => {
    const i = phases.findIndex((p) => p.name === name)
    return i >= 0 && i + 1 < phases.length ? fmt(phases[i + 1]!.t - phases[i]!.t, 0) : ''
  }
  return table(
    [
      'phase',
      'ms',
      'requests',
      `slow (> ${fmt(slowMs)} ms)`,
      'with a stall',
      'with a GC pause',
      'longest stalls ms',
    ],
    [...rows].map(([name, r]) => [
      name,
      lasted(name),
      r.n,
      r.slow,
      r.stall,
      r.gc,
      r.worst
        .sort((a, b) => b - a)
        .slice(0, 5)
        .join(' '),
    ]),
  )
}
