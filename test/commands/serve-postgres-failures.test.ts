import {test, describe, after, before} from 'node:test'
import assert from 'node:assert/strict'
import {freePort, postgresMissing, type PgCluster} from '../helpers/postgres.ts'
import {FIXTURES, getJson, startServe, tempDir, writeConfig} from '../helpers/serve-process.ts'
import {pgCluster, stopStoreBackends} from '../helpers/store-backends.ts'
import {startTcpRelay} from '../helpers/tcp-relay.ts'

/**
 * `serve` when its PostgreSQL database is away (issue #15): at start it waits (retrying with
 * backoff, /health up, /readiness 503) instead of exiting; while serving, registry routes answer
 * 503 JSON promptly, /health keeps answering, and everything recovers without restarting `serve`,
 * also when the database falls silent rather than refusing.
 */
after(() => stopStoreBackends())

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

function config(
  dir: string,
  url: string,
  timeouts = 'connectTimeout: 2s, statementTimeout: 5s',
): string {
  return writeConfig(
    dir,
    'serve.yaml',
    `sources:
  - name: fixture
    file: {path: ${FIXTURES}/registry.json}
registries:
  - name: default
    sources: [fixture]
auth: {mode: anonymous}
storage:
  postgres: {url: "${url}", ${timeouts}}
`,
  )
}

async function status(url: string): Promise<{status: number; body: unknown}> {
  try {
    return await getJson(url)
  } catch {
    return {status: 0, body: undefined}
  }
}

describe('serve with its PostgreSQL database away', {skip: postgresMissing}, () => {
  let cluster: PgCluster
  before(async () => {
    cluster = await pgCluster()
  })

  test('database down at start: health up, not ready, retries; starts serving once it is back', async (t) => {
    const url = await cluster.createDatabase()
    await cluster.stop()
    t.after(() => cluster.start().catch(() => undefined))
    const dir = tempDir()
    const internal = await freePort()
    const starting = startServe(
      ['--config', config(dir, url), '--internal-address', `127.0.0.1:${internal}`],
      {timeoutMs: 90_000},
    )
    starting.catch(() => undefined)
    const base = `http://127.0.0.1:${internal}`
    let health = await status(`${base}/health`)
    for (let i = 0; i < 100 && health.status !== 200; i++) {
      await sleep(100)
      health = await status(`${base}/health`)
    }
    assert.equal(health.status, 200)
    const notReady = await status(`${base}/readiness`)
    assert.equal(notReady.status, 503)
    assert.deepEqual(notReady.body, {error: 'service not ready'})
    await sleep(1500) // a few retries
    await cluster.start()
    const s = await starting
    t.after(() => s.stop())
    assert.match(s.stderr(), /database unavailable; retrying/)
    assert.doesNotMatch(s.stderr(), /postgres:\/\//, 'the connection string is never logged')
    assert.equal((await getJson(`${s.internalUrl}/readiness`)).status, 200)
    const list = await getJson(`${s.url}/registry/default/v0.1/servers?limit=3`)
    assert.equal(list.status, 200)
  })

  test('database restart under load: 503 JSON meanwhile, /health answers, recovery without restart', async (t) => {
    const url = await cluster.createDatabase()
    const s = await startServe(['--config', config(tempDir(), url)])
    t.after(() => s.stop())
    const counts = new Map<number, number>()
    let slowest = 0
    let stop = false
    let i = 0
    const client = async () => {
      while (!stop) {
        // Distinct queries, so most requests reach the database rather than the response cache.
        const q = `limit=${1 + (i++ % 50)}&search=${['a', 'e', 'o', 'weather'][i % 4]}`
        const started = performance.now()
        const r = await getJson(`${s.url}/registry/default/v0.1/servers?${q}`)
        slowest = Math.max(slowest, performance.now() - started)
        counts.set(r.status, (counts.get(r.status) ?? 0) + 1)
        if (r.status !== 200) {
          assert.equal(r.status, 503, r.text)
          assert.deepEqual(r.body, {error: 'storage unavailable'})
          assert.equal(r.headers.get('content-type'), 'application/json')
        }
      }
    }
    const clients = Array.from({length: 8}, client)
    await sleep(500)
    await cluster.stop()
    // Cached pages stay valid until the store notices the outage (its 1 s generation poll).
    await sleep(1500)
    assert.equal((await getJson(`${s.internalUrl}/health`)).status, 200)
    assert.equal((await getJson(`${s.internalUrl}/readiness`)).status, 503)
    await sleep(1500)
    await cluster.start()
    // Back within a reconnection delay (at most 1 s) and a poll; the driver's own backoff, which
    // grows to 20 s, took 11 s here.
    let ready = 0
    for (let n = 0; n < 50 && ready !== 200; n++) {
      await sleep(100)
      ready = (await status(`${s.internalUrl}/readiness`)).status
    }
    assert.equal(ready, 200, 'ready again without a restart')
    const before503 = counts.get(503) ?? 0
    await sleep(1000)
    stop = true
    await Promise.all(clients)
    assert.ok(before503 > 0, `requests during the outage got 503: ${JSON.stringify([...counts])}`)
    assert.deepEqual([...counts.keys()].sort(), [200, 503])
    // Each request waits for one connection attempt (refused at once, or 2 s connectTimeout)
    // after at most a 1 s reconnection delay (~1 s measured), and the read deadline (8 s) bounds
    // it anyway; the driver's own backoff made requests wait 15-19 s.
    assert.ok(slowest < 8000, `the slowest request took ${Math.round(slowest)} ms`)
    const after = await getJson(`${s.url}/registry/default/v0.1/servers?limit=100&search=o`)
    assert.equal(after.status, 200)
    assert.equal(s.proc.exitCode, null, 'the same serve process')
  })

  test('a database behind a silent network: requests answer 503 by the read deadline, not never', async (t) => {
    const url = new URL(await cluster.createDatabase())
    const relay = await startTcpRelay(Number(url.port))
    t.after(() => relay.close())
    url.port = String(relay.port)
    // Deadline = connectTimeout + statementTimeout + 1 s = 4 s. One pooled connection, so every
    // call below waits on the connection that fell silent (a new one would fail its connect).
    const s = await startServe([
      '--config',
      config(tempDir(), url.href, 'connectTimeout: 1s, statementTimeout: 2s, poolSize: 1'),
    ])
    t.after(() => s.stop())
    const list = (q: string) => getJson(`${s.url}/registry/default/v0.1/servers?${q}`)
    assert.equal((await list('limit=2')).status, 200)

    relay.silence()
    const timed = await Promise.all(
      ['limit=3', 'limit=4&search=a', 'limit=5&search=e', 'limit=6&search=o'].map(async (q) => {
        const started = performance.now()
        const r = await list(q)
        return {r, ms: performance.now() - started}
      }),
    )
    for (const {r, ms} of timed) {
      assert.equal(r.status, 503, r.text)
      assert.deepEqual(r.body, {error: 'storage unavailable'})
      // Without the deadline these would wait for TCP to give up (many minutes); 30 s fails here.
      assert.ok(ms < 8000, `answered after ${Math.round(ms)} ms`)
    }
    assert.equal((await getJson(`${s.internalUrl}/health`)).status, 200)
    assert.equal((await status(`${s.internalUrl}/readiness`)).status, 503)
    // A scrape waits for the store's sync status and version count: bounded too.
    const scrapeStarted = performance.now()
    const metrics = await getJson(`${s.internalUrl}/metrics`)
    const scrapeMs = performance.now() - scrapeStarted
    assert.equal(metrics.status, 200)
    assert.match(metrics.text, /^toolgate_storage_up 0$/m)
    assert.ok(scrapeMs < 8000, `the scrape took ${Math.round(scrapeMs)} ms`)
    assert.match(
      s.stderr(),
      /storage unavailable .*"storage: the database did not answer within 4000 ms"/,
    )
    assert.doesNotMatch(s.stderr(), /postgres:\/\//, 'the connection string is never logged')

    relay.restore()
    let ready = 0
    for (let n = 0; n < 100 && ready !== 200; n++) {
      await sleep(100)
      ready = (await status(`${s.internalUrl}/readiness`)).status
    }
    assert.equal(ready, 200, 'ready again once the network is back')
    assert.equal((await list('limit=7&search=weather')).status, 200)
    assert.equal(s.proc.exitCode, null, 'the same serve process')
  })
})
