/**
 * A probe loaded into a `serve` process (`NODE_OPTIONS=--import <this file>`) by
 * bench/serve-postgres.bench.ts when BENCH_PG_PROBE=1. On the main thread it writes `PROBE {json}`
 * lines to stderr, each with an epoch-ms time `t`:
 * - `phase`: a step of a source sync (the sync-phase diagnostics channel,
 *   src/lib/registry/sync-phases.ts), with the V8 heap in use then (`heapMb`);
 * - `stall`: the event loop ran a 2 ms timer more than 8 ms late (`ms` late, ending at `t`);
 * - `gc`: a GC pause over 4 ms (`ms` long, starting at `t`; `kind` as in perf_hooks.constants).
 * The timer costs the process a little; figures taken with the probe are for attribution only.
 */
import {subscribe} from 'node:diagnostics_channel'
import {PerformanceObserver} from 'node:perf_hooks'
import {isMainThread} from 'node:worker_threads'
import {SYNC_PHASE_CHANNEL, type SyncPhaseMessage} from '../../src/lib/registry/sync-phases.ts'

const TICK_MS = 2
const STALL_MS = 8
const GC_MS = 4

if (isMainThread) {
  const write = (o: object) => process.stderr.write(`PROBE ${JSON.stringify(o)}\n`)
  subscribe(SYNC_PHASE_CHANNEL, (m) => {
    const {phase, at} = m as SyncPhaseMessage
    write({
      k: 'phase',
      name: phase,
      t: at,
      heapMb: Math.round(process.memoryUsage().heapUsed / 1048576),
    })
  })
  let last = performance.now()
  setInterval(() => {
    const now = performance.now()
    const late = now - last - TICK_MS
    if (late > STALL_MS) write({k: 'stall', ms: Math.round(late), t: Date.now()})
    last = now
  }, TICK_MS).unref()
  new PerformanceObserver((list) => {
    for (const e of list.getEntries())
      if (e.duration > GC_MS)
        write({
          k: 'gc',
          ms: Math.round(e.duration),
          t: Math.round(performance.timeOrigin + e.startTime),
          // perf_hooks.constants: 1 minor (scavenge), 4 major, 8 incremental marking, 16 weak callbacks
          kind: (e as PerformanceEntry & {detail?: {kind?: number}}).detail?.kind,
        })
  }).observe({entryTypes: ['gc']})
}
