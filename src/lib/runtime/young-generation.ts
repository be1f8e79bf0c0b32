import {setFlagsFromString} from 'node:v8'

/**
 * Keeps V8's young generation at its initial size for the life of a long-running server process
 * (`serve`, the proxy pipeline, a workload).
 *
 * V8 doubles the young generation whenever many objects survive a scavenge, up to 64 MB of
 * semi-spaces, and rarely shrinks it. A server's garbage is almost all per-request, so the bigger
 * young generation buys nothing: under wrk, `serve` at 100,000 versions grew `heapTotal` from ~50
 * to ~160 MB and RSS to ~380 MB at the same requests/s (bench/perf-table.bench.ts, issue 19), and a
 * detached workload's RSS grew the same way (bench/run-bridge.bench.ts, issue 11).
 *
 * `--max-semi-space-size` has no effect once the heap exists, and neither the npm entry
 * (`#!/usr/bin/env node`) nor the standalone executable can put Node flags on their own command
 * line; the growth factor, read at each scavenge, can be set here. V8 documents setting flags
 * after start as unsupported in general; this one is a sizing heuristic, and its effect is
 * checked by test/lib/runtime/young-generation.test.ts.
 */
let applied = false

export function keepYoungGenerationSmall(): void {
  if (applied) return
  applied = true
  setFlagsFromString('--semi-space-growth-factor=1')
}
