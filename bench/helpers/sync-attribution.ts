/**
 * Relates readers' slow requests during a sync to what the serve process was doing
 * (bench/helpers/serve-probe.ts lines): per sync phase, how many requests started in it, how many
 * were slow, how many of those overlapped an event-loop stall or a GC pause of the process, and
 * the process's GC pauses over 4 ms in the phase (scavenges apart from the rest).
 */
import {fmt, table} from './table.ts'

interface ProbeEvent {
  k: 'phase' | 'stall' | 'gc'
  t: number
  name?: string
  ms?: number
  /** GC: perf_hooks.constants kind (1 minor, 4 major, 8 incremental marking, 16 weak callbacks). */
  kind?: number
  heapMb?: number
}

interface Block {
  kind: 'stall' | 'gc'
  from: number
  to: number
  ms: number
  gcKind?: number
}

interface Row {
  requests: number
  slow: number
  withStall: number
  withGc: number
  stalls: number[]
  scavenges: number[]
  otherGc: number[]
}

/** `requests`: [epoch-ms start, latency ms] of each request; `lines`: the process's stderr lines. */
export function attributeSlowRequests(
  requests: Array<[number, number]>,
  lines: string[],
  slowMs: number,
): string {
  const events = lines
    .filter((l) => l.startsWith('PROBE '))
    .map((l) => JSON.parse(l.slice(6)) as ProbeEvent)
  const phases = events.filter((e) => e.k === 'phase')
  const blocks: Block[] = events
    .filter((e) => e.k !== 'phase')
    .map((e) => {
      const ms = e.ms ?? 0
      // A stall is reported when it ends; a GC pause when it starts.
      return e.k === 'gc'
        ? {kind: 'gc', from: e.t, to: e.t + ms, ms, gcKind: e.kind}
        : {kind: 'stall', from: e.t - ms, to: e.t, ms}
    })
  const phaseAt = (t: number) => phases.findLast((p) => p.t <= t)?.name ?? 'before'
  const rows = new Map<string, Row>()
  const row = (name: string) => {
    let r = rows.get(name)
    if (!r) {
      r = {requests: 0, slow: 0, withStall: 0, withGc: 0, stalls: [], scavenges: [], otherGc: []}
      rows.set(name, r)
    }
    return r
  }
  row('before')
  for (const p of phases) row(p.name!)
  for (const [start, latency] of requests) {
    const r = row(phaseAt(start))
    r.requests++
    if (latency <= slowMs) continue
    r.slow++
    const hit = blocks.filter((b) => b.from < start + latency && b.to > start)
    if (hit.some((b) => b.kind === 'stall')) r.withStall++
    if (hit.some((b) => b.kind === 'gc')) r.withGc++
  }
  for (const b of blocks) {
    const r = row(phaseAt(b.from))
    if (b.kind === 'stall') r.stalls.push(b.ms)
    else if (b.gcKind === 1) r.scavenges.push(b.ms)
    else r.otherGc.push(b.ms)
  }
  const pauses = (ms: number[]) => (ms.length > 0 ? `${ms.length} (max ${Math.max(...ms)})` : '0')
  const phase = (name: string) => phases.findIndex((p) => p.name === name)
  const lasted = (name: string) => {
    const i = phase(name)
    return i >= 0 && i + 1 < phases.length ? fmt(phases[i + 1]!.t - phases[i]!.t, 0) : ''
  }
  return table(
    [
      'phase',
      'ms',
      'heap MB',
      'requests',
      `slow (> ${fmt(slowMs)} ms)`,
      'with a stall',
      'with a GC pause',
      'scavenges > 4 ms',
      'other GC > 4 ms',
      'longest stalls ms',
    ],
    [...rows].map(([name, r]) => [
      name,
      lasted(name),
      phases[phase(name)]?.heapMb ?? '',
      r.requests,
      r.slow,
      r.withStall,
      r.withGc,
      pauses(r.scavenges),
      pauses(r.otherGc),
      r.stalls
        .sort((a, b) => b - a)
        .slice(0, 5)
        .join(' '),
    ]),
  )
}
