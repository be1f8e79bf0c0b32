import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {nextSliceMs} from '../../../src/lib/registry/postgres/sync.ts'

/**
 * How much staging work a PostgreSQL sync does between two turns of the event loop (issue 15):
 * 0.5 ms while readers leave the loop mostly idle, so their latency barely moves (each of a
 * request's turns of the loop waits for a slice: 2 ms slices took open-loop readers' p50 from 1 to
 * 11 ms during a 100k staging, 0.5 ms to 4 ms, the staging as long); half of what they
 * just used when they keep it busy, so a sync under load still gets about a third of the process
 * (100k staging under saturated readers: 13.4 s → 7.4 s in bench/serve-postgres.bench.ts); never
 * more than 12 ms, so no single slice holds a reader for long.
 */
describe('the COPY staging slice', () => {
  it('is 0.5 ms while the event loop is lightly used between slices', () => {
    for (const others of [0, 0.2, 0.5, 0.99]) assert.equal(nextSliceMs(others), 0.5)
  })

  it('grows to half of what the others just had when readers keep the loop busy', () => {
    assert.equal(nextSliceMs(2), 1)
    assert.equal(nextSliceMs(8), 4)
    assert.equal(nextSliceMs(16), 8)
  })

  it('is capped at 12 ms however long the others ran', () => {
    for (const others of [24, 100, 5_000]) assert.equal(nextSliceMs(others), 12)
  })
})
