import {test, describe, before, after} from 'node:test'
import assert from 'node:assert/strict'
import {mkdtemp, rm, stat} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {SqliteRegistryStore} from '../../../src/lib/registry/sqlite-store.ts'
import type {ServerJson} from '../../../src/lib/registry/types.ts'

// A sync large enough to take many batches (the store yields every 2,000 rows).
const SIZE = 24_000
const T0 = new Date('2025-01-01T00:00:00.000Z')
const T1 = new Date('2025-02-01T00:00:00.000Z')

function* servers(prefix: string, n: number): Generator<ServerJson> {
  for (let i = 0; i < n; i++) {
    const name = `io.${prefix}/server-${String(i).padStart(6, '0')}`
    yield {name, version: '1.0.0', description: `The ${prefix} server number ${i}`}
    if (i % 4 === 0) yield {name, version: '1.1.0', description: `The ${prefix} server number ${i}`}
  }
}
const versionsOf = (n: number) => n + Math.ceil(n / 4)

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('SqliteRegistryStore cooperative sync (database file)', () => {
  let dir: string
  let store: SqliteRegistryStore
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolgate-sync-'))
    store = new SqliteRegistryStore({path: join(dir, 'registry.db')})
    await store.init()
    await store.setRegistries([{name: 'default', sources: ['a']}])
  })
  after(async () => {
    await store.close()
    await rm(dir, {recursive: true, force: true})
  })

  test('reads keep answering while a large sync runs, and see the old set or the new one, never a mix', async () => {
    await store.replaceSource('a', servers('old', SIZE / 2), T0)
    const oldCount = versionsOf(SIZE / 2)
    const newCount = versionsOf(SIZE)
    assert.equal(store.countRegistryVersions('default'), oldCount)

    let finished = false
    const sync = store.replaceSource('a', servers('new', SIZE), T1).finally(() => {
      finished = true
    })
    const seen: Array<{finished: boolean; count: number; prefixes: Set<string>}> = []
    while (!finished) {
      await nextTurn()
      // What a request would do between two batches: ping (/readiness), count, one page.
      await store.ping()
      const count = store.countRegistryVersions('default')
      const page = await store.listServers('default', {limit: 100})
      const prefixes = new Set(page.servers.map((e) => e.server.name.split('/')[0] ?? ''))
      seen.push({finished, count, prefixes})
    }
    const stats = await sync

    const during = seen.filter((s) => !s.finished)
    assert.ok(during.length > 0, 'a read completed before the sync finished')
    for (const s of seen) {
      assert.ok(s.count === oldCount || s.count === newCount, `count ${s.count} is a mix`)
      assert.equal(s.prefixes.size, 1, `one page mixes ${[...s.prefixes].join(', ')}`)
      const prefix = [...s.prefixes][0]
      assert.equal(s.count, prefix === 'io.old' ? oldCount : newCount, 'count and page agree')
    }
    assert.equal(store.countRegistryVersions('default'), newCount)
    assert.deepEqual(
      {added: stats.added, removed: stats.removed, versions: stats.versions},
      {added: newCount, removed: oldCount, versions: newCount},
    )
    const latest = await store.listServers('default', {limit: 5, version: 'latest'})
    assert.deepEqual(
      latest.servers.map((e) => `${e.server.name}@${e.server.version}`),
      [
        'io.new/server-000000@1.1.0',
        'io.new/server-000001@1.0.0',
        'io.new/server-000002@1.0.0',
        'io.new/server-000003@1.0.0',
        'io.new/server-000004@1.1.0',
      ],
    )
  })

  test('writes queued during a sync run after it, in order', async () => {
    const first = store.replaceSource('a', servers('first', SIZE / 4), T0)
    const second = store.replaceSource('a', servers('second', 10), T1)
    const [a, b] = await Promise.all([first, second])
    assert.equal(a.added, versionsOf(SIZE / 4))
    assert.equal(b.removed, versionsOf(SIZE / 4))
    assert.equal(store.countRegistryVersions('default'), versionsOf(10))
  })
})

describe('SqliteRegistryStore close during a sync', () => {
  test('close() stops the sync at its next yield, rolls it back, and the old data survives', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolgate-sync-close-'))
    const path = join(dir, 'registry.db')
    try {
      const store = new SqliteRegistryStore({path})
      await store.init()
      await store.setRegistries([{name: 'default', sources: ['a']}])
      await store.replaceSource('a', servers('old', 100), T0)
      const sync = store.replaceSource('a', servers('new', SIZE), T1)
      const outcome = sync.then(
        () => 'completed',
        (err: Error) => err.message,
      )
      await nextTurn()
      await store.close()
      assert.match(await outcome, /the store is closing/)

      const again = new SqliteRegistryStore({path})
      await again.init()
      try {
        assert.equal(again.countRegistryVersions('default'), versionsOf(100))
        const page = await again.listServers('default', {limit: 1})
        assert.equal(page.servers[0]?.server.name, 'io.old/server-000000')
      } finally {
        await again.close()
      }
    } finally {
      await rm(dir, {recursive: true, force: true})
    }
  })
})

describe('WAL checkpoints when the checkpoint worker cannot run', () => {
  test('fall back to the writer connection, so the log stays bounded across syncs', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolgate-wal-'))
    const path = join(dir, 'registry.db')
    let workerCalls = 0
    // Stands in for a platform where worker_threads cannot start (the real worker is used elsewhere).
    const store = new SqliteRegistryStore({
      path,
      checkpoint: async () => {
        workerCalls++
        throw new Error('workers are not available here')
      },
    })
    try {
      await store.init()
      await store.setRegistries([{name: 'default', sources: ['a']}])
      const walSize = async () => (await stat(`${path}-wal`)).size
      const settle = async () => {
        for (let i = 0; i < 20; i++) await nextTurn()
      }
      await store.replaceSource('a', servers('gen0', 4_000), T0)
      await settle()
      const afterOne = await walSize()
      for (let g = 1; g <= 5; g++) {
        await store.replaceSource('a', servers(`gen${g}`, 4_000), T1)
        await settle()
      }
      const afterSix = await walSize()
      assert.ok(workerCalls >= 1, 'the worker was tried first')
      // Without any checkpoint every sync appends its pages: six syncs would need about 6x the log.
      assert.ok(afterSix < afterOne * 2.5, `WAL grew from ${afterOne} to ${afterSix} bytes`)
      assert.equal(
        (await store.listServers('default', {limit: 1})).servers[0]?.server.name,
        'io.gen5/server-000000',
      )
    } finally {
      await store.close()
      await rm(dir, {recursive: true, force: true})
    }
  })
})
