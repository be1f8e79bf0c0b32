import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {PerformanceObserver, constants} from 'node:perf_hooks'
import {countForwarded} from '../../../src/lib/proxy/young-gc.ts'

/** Minor GCs observed while `fn` runs (the observer reports them asynchronously). */
async function minorGcsDuring(fn: () => void): Promise<number> {
  let minor = 0
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (
        ((e as {detail?: unknown}).detail as {kind?: number} | undefined)?.kind ===
        constants.NODE_PERFORMANCE_GC_MINOR
      )
        minor++
    }
  })
  obs.observe({entryTypes: ['gc']})
  try {
    fn()
    await new Promise((r) => setTimeout(r, 100))
  } finally {
    obs.disconnect()
  }
  return minor
}

describe('young-generation GC while streaming', () => {
  it('runs a minor GC once 8 MiB of body has been forwarded, and not before', async () => {
    // Flush whatever the counter holds from module state, then count from zero.
    countForwarded(8 * 1024 * 1024)
    const below = await minorGcsDuring(() => {
      for (let i = 0; i < 100; i++) countForwarded(1024) // 100 KiB: no GC expected from us
    })
    const above = await minorGcsDuring(() => {
      for (let i = 0; i < 3 * 128; i++) countForwarded(64 * 1024) // 24 MiB: three GCs
    })
    assert.ok(above >= 3, `expected at least 3 minor GCs after 24 MiB, saw ${above}`)
    assert.ok(
      below < above,
      `counting 100 KiB should not trigger GCs (saw ${below}, vs ${above} for 24 MiB)`,
    )
  })

  it('does not expose gc() in the main context', () => {
    countForwarded(8 * 1024 * 1024)
    assert.equal(typeof (globalThis as {gc?: unknown}).gc, 'undefined')
  })
})
