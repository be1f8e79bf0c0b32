import {after, test} from 'node:test'
import assert from 'node:assert/strict'
import {mkdtempSync, renameSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {monitorEventLoopDelay} from 'node:perf_hooks'
import {syntheticServers, wrap} from '../../../scripts/registry-data/generate.ts'
import {validateServeConfig} from '../../../src/lib/config/serve-config.ts'
import {createLogger} from '../../../src/lib/log/logger.ts'
import {startServe} from '../../../src/lib/server/serve.ts'

/**
 * Source syncing never blocks the event loop for long (issue 18): a 100 MB registry file replacing
 * a small one is resynced while clients keep reading, and the event-loop delay p99 measured by
 * perf_hooks.monitorEventLoopDelay stays bounded. The bounds are loose on purpose (CI shares
 * 2 cores with other suites; p99 was 20-51 ms there): p99 under 150 ms, and no single stall of
 * 2 s, where a sync that blocks the loop stalls for all of it (~4.8 s before issue 18). The
 * figures themselves are printed as a diagnostic.
 */
const dir = mkdtempSync(join(tmpdir(), 'toolgate-sync-eld-'))
after(() => rmSync(dir, {recursive: true, force: true}))

test('a 100 MB source syncing while clients read keeps the event loop turning (delay p99 < 150 ms, no 2 s stall)', async (t) => {
  const file = join(dir, 'registry.json')
  writeFileSync(
    file,
    JSON.stringify([{name: 'io.example/small', version: '1.0.0', description: 'x'}]),
  )
  const config = validateServeConfig(
    {
      sources: [{name: 's', file: {path: file}}],
      registries: [{name: 'default', sources: ['s']}],
      auth: {mode: 'anonymous'},
      storage: {sqlite: {path: join(dir, 'registry.db')}},
    },
    {defaultDbPath: join(dir, 'unused.db'), baseDir: dir},
  )
  const handle = await startServe(config, {
    address: {host: '127.0.0.1', port: 0},
    internalAddress: {host: '127.0.0.1', port: 0},
    logger: createLogger({level: 'error'}),
  })
  try {
    const servers = syntheticServers(78_000)
    const big = join(dir, 'big.json.tmp')
    writeFileSync(big, JSON.stringify(wrap(servers, '2026-01-01T00:00:00Z')))
    assert.ok(statSync(big).size >= 100e6, `${statSync(big).size} bytes`)
    const last = (servers.at(-1) as {name: string}).name
    const latest = `${handle.url}/registry/default/v0.1/servers/${encodeURIComponent(last)}/versions/latest`

    let reading = true
    let reads = 0
    const reader = async () => {
      while (reading) {
        const res = await fetch(`${handle.url}/registry/default/v0.1/servers?limit=30`)
        assert.equal(res.status, 200)
        await res.arrayBuffer()
        reads++
      }
    }
    const delay = monitorEventLoopDelay({resolution: 5})
    delay.enable()
    const readers = [reader(), reader()]
    renameSync(big, file) // the watcher starts the resync
    const until = Date.now() + 240_000
    for (;;) {
      const res = await fetch(latest)
      await res.arrayBuffer()
      if (res.status === 200) break
      assert.ok(Date.now() < until, 'the resync did not finish within 240 s')
      await new Promise((r) => setTimeout(r, 100))
    }
    delay.disable()
    reading = false
    await Promise.all(readers)
    const p99 = delay.percentile(99) / 1e6
    const summary = `p50 ${(delay.percentile(50) / 1e6).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${(delay.max / 1e6).toFixed(1)} ms over ${delay.count} samples, ${reads} reads`
    t.diagnostic(summary)
    assert.ok(reads > 0, 'clients were reading during the sync')
    assert.ok(p99 < 150, `event-loop delay: ${summary}`)
    assert.ok(delay.max / 1e6 < 2000, `event-loop stall: ${summary}`)
  } finally {
    await handle.close()
  }
})
