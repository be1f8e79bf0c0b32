import {test, describe, after, before} from 'node:test'
import assert from 'node:assert/strict'
import {postgresMissing, type PgCluster} from '../helpers/postgres.ts'
import {startRegistryUpstream, type RegistryUpstream} from '../helpers/registry-upstream.ts'
import {
  getJson,
  startServe,
  tempDir,
  writeConfig,
  type ServeProcess,
} from '../helpers/serve-process.ts'
import {pgCluster, stopStoreBackends} from '../helpers/store-backends.ts'

/**
 * Several `serve` replicas on one PostgreSQL database (contract §1 "Scale-out"): syncs are
 * coordinated (one per source per interval, across all replicas), a replica killed mid-sync is
 * replaced by another once its lease expires, and readers on every replica see whole generations.
 */
const NAMES = 240
const INTERVAL_MS = 2000
const LEASE_MS = 2000

after(() => stopStoreBackends())

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

interface Page {
  servers: {server: {name: string; description: string}}[]
  metadata: {nextCursor?: string}
}

function config(dir: string, url: string, upstream: string): string {
  return writeConfig(
    dir,
    'serve.yaml',
    `sources:
  - name: up
    file: {url: "${upstream}"}
    syncPolicy: {interval: ${INTERVAL_MS}ms}
registries:
  - name: default
    sources: [up]
auth: {mode: anonymous}
storage:
  postgres: {url: "${url}", syncLease: ${LEASE_MS}ms}
`,
  )
}

/** The generations the entries of one page come from (one, unless a page mixes syncs). */
function generationsOf(page: Page): Set<string> {
  return new Set(page.servers.map((e) => /^gen-(\d+)/.exec(e.server.description)?.[1] ?? '?'))
}

async function waitFor(what: string, check: () => Promise<boolean>, ms = 30_000) {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`)
    await sleep(100)
  }
}

async function generationServed(s: ServeProcess): Promise<string | undefined> {
  const r = await getJson(`${s.url}/registry/default/v0.1/servers?limit=5`)
  if (r.status !== 200) return undefined
  return [...generationsOf(r.body as Page)].join(',')
}

describe('serve replicas on one PostgreSQL database', {skip: postgresMissing}, () => {
  let cluster: PgCluster
  before(async () => {
    cluster = await pgCluster()
  })

  let db = ''
  async function replicas(n: number, upstream: RegistryUpstream): Promise<ServeProcess[]> {
    const url = await cluster.createDatabase()
    db = new URL(url).pathname.slice(1)
    const dir = tempDir()
    const cfg = config(dir, url, upstream.url)
    return Promise.all(Array.from({length: n}, () => startServe(['--config', cfg])))
  }

  test('three replicas: one initial load, then one sync per interval in all (fetches counted)', async (t) => {
    const upstream = await startRegistryUpstream(NAMES)
    t.after(() => upstream.close())
    const all = await replicas(3, upstream)
    t.after(() => Promise.all(all.map((s) => s.stop())))
    assert.equal(
      upstream.fetches.length,
      1,
      'the replicas starting together loaded the source once',
    )
    for (const s of all) {
      assert.equal((await getJson(`${s.internalUrl}/readiness`)).status, 200)
      assert.equal(await generationServed(s), '1')
    }
    const from = upstream.fetches.length
    const windowMs = 5 * INTERVAL_MS
    await sleep(windowMs)
    const times = upstream.fetches.slice(from)
    // Uncoordinated, three replicas would fetch 15 times in five intervals.
    assert.ok(times.length >= 2 && times.length <= 6, `fetches in 5 intervals: ${times.length}`)
    for (let i = 1; i < times.length; i++) {
      // The database refuses a claim until 90% of an interval after the last start.
      assert.ok(times[i]! - times[i - 1]! >= INTERVAL_MS * 0.85, `fetch gaps: ${times.join(',')}`)
    }
  })

  test('kill -9 of the syncing replica: another finishes the sync once the lease expires', async (t) => {
    const upstream = await startRegistryUpstream(NAMES)
    t.after(() => upstream.close())
    const all = await replicas(2, upstream)
    t.after(() => Promise.all(all.map((s) => s.stop('SIGKILL'))))
    upstream.generation = 2
    upstream.hold = true
    await waitFor('a sync to start', async () => upstream.held > 0)
    const heldAt = upstream.fetches[upstream.fetches.length - 1]!
    // The lease holder's name carries its pid: that is the replica stuck mid-sync.
    const holder = (
      await cluster.psql("SELECT lease_holder FROM source_sync WHERE source = 'up'", db)
    ).trim()
    const pid = Number(/-(\d+)-[0-9a-f]+$/.exec(holder)?.[1])
    assert.ok(pid > 0, `lease holder: ${holder}`)
    process.kill(pid, 'SIGKILL')
    await sleep(300)
    const alive = await Promise.all(
      all.map((s) =>
        getJson(`${s.internalUrl}/health`).then(
          (r) => r.status === 200,
          () => false,
        ),
      ),
    )
    assert.deepEqual(alive.filter(Boolean).length, 1, 'one replica is left')
    const survivor = all[alive.indexOf(true)]!
    upstream.release()
    await waitFor('the survivor to serve generation 2', async () => {
      return (await generationServed(survivor)) === '2'
    })
    const retried = upstream.fetches.filter((f) => f > heldAt)
    assert.ok(retried.length >= 1)
    assert.ok(
      retried[0]! - heldAt >= LEASE_MS * 0.9,
      `no replica took the source over before the lease expired (${retried[0]! - heldAt} ms)`,
    )
    assert.equal((await getJson(`${survivor.internalUrl}/readiness`)).status, 200)
  })

  test('readers on every replica see one generation per page while syncs commit', async (t) => {
    const upstream = await startRegistryUpstream(NAMES)
    t.after(() => upstream.close())
    const all = await replicas(3, upstream)
    t.after(() => Promise.all(all.map((s) => s.stop())))
    const seen = all.map(() => new Set<string>())
    let pages = 0
    let stop = false
    const reader = async (s: ServeProcess, i: number) => {
      while (!stop) {
        let cursor: string | undefined
        do {
          const q = cursor ? `&cursor=${cursor}` : ''
          const r = await getJson(`${s.url}/registry/default/v0.1/servers?limit=50${q}`)
          assert.equal(r.status, 200, r.text)
          const page = r.body as Page
          const gens = generationsOf(page)
          assert.equal(gens.size, 1, `a page mixes generations ${[...gens].join(',')}`)
          for (const g of gens) seen[i]!.add(g)
          pages++
          cursor = page.metadata.nextCursor
        } while (cursor && !stop)
      }
    }
    const readers = all.flatMap((s, i) => [reader(s, i), reader(s, i)])
    for (let g = 2; g <= 4; g++) {
      upstream.generation = g
      await waitFor(`generation ${g} on every replica`, async () =>
        (await Promise.all(all.map(generationServed))).every((x) => x === String(g)),
      )
    }
    stop = true
    await Promise.all(readers)
    assert.ok(pages > 20, `pages read: ${pages}`)
    for (const s of seen) assert.ok(s.size >= 2, `generations seen: ${[...s].join(',')}`)
  })
})
