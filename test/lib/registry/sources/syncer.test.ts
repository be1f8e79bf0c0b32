import {test, describe, before, after} from 'node:test'
import assert from 'node:assert/strict'
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {SqliteRegistryStore} from '../../../../src/lib/registry/sqlite-store.ts'
import {
  SourceSyncer,
  type SourceSyncerOptions,
} from '../../../../src/lib/registry/sources/syncer.ts'
import {atomicWriteFile} from '../../../../src/lib/fs/atomic-write.ts'
import {recordSyncPhases} from '../../../helpers/sync-phases.ts'
import {createMemoryLogger} from '../../../../src/lib/log/logger.ts'
import {isToolgateError} from '../../../../src/lib/errors.ts'
import {
  OFFICIAL_META_KEY,
  type ServerJson,
  type SourceConfig,
} from '../../../../src/lib/registry/types.ts'

// All data here goes through the real store (node:sqlite), real files and fs.watch, and real HTTP
// servers on 127.0.0.1. Nothing is faked.

const wrapper = (servers: unknown[]) =>
  JSON.stringify({version: '1', meta: {last_updated: '2025-01-01T00:00:00Z'}, data: {servers}})
const srv = (name: string, version = '1.0.0', extra: Partial<ServerJson> = {}): ServerJson => ({
  name,
  version,
  ...extra,
})

async function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, 25))
  }
  assert.fail(`timed out waiting for ${what}`)
}

async function listen(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{server: Server; url: string}> {
  const server = createServer(handler)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`}
}

async function closeServer(server: Server) {
  server.closeAllConnections()
  await new Promise<void>((r) => server.close(() => r()))
}

interface Rig {
  store: SqliteRegistryStore
  syncer: SourceSyncer
  logger: ReturnType<typeof createMemoryLogger>
  names: () => Promise<string[]>
}

const rigs: Rig[] = []
async function rig(
  sources: SourceConfig[],
  options: Partial<SourceSyncerOptions> = {},
): Promise<Rig> {
  const store = new SqliteRegistryStore({path: ':memory:'})
  await store.init()
  await store.setRegistries([{name: 'default', sources: sources.map((s) => s.name)}])
  const logger = createMemoryLogger()
  const syncer = new SourceSyncer({store, sources, logger, debounceMs: 50, ...options})
  const r: Rig = {
    store,
    syncer,
    logger,
    names: async () =>
      (await store.listServers('default', {limit: 100})).servers.map(
        (e) => `${e.server.name}@${e.server.version}`,
      ),
  }
  rigs.push(r)
  return r
}

after(async () => {
  for (const r of rigs) {
    await r.syncer.stop()
    await r.store.close()
  }
})

describe('file sources on a local path', () => {
  let dir: string
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolgate-sources-'))
  })
  after(() => rm(dir, {recursive: true, force: true}))

  test('loads the wrapper format at start and reports ready with stats', async () => {
    const path = join(dir, 'wrapper.json')
    await writeFile(path, wrapper([srv('io.x/a'), srv('io.x/b', '2.0.0')]))
    const {syncer, names} = await rig([{name: 'local', kind: 'file', path}], {watch: false})
    assert.equal(syncer.isReady(), false)
    await syncer.start()
    assert.equal(syncer.isReady(), true)
    assert.deepEqual(await names(), ['io.x/a@1.0.0', 'io.x/b@2.0.0'])
    const [stats] = syncer.stats()
    assert.equal(stats?.name, 'local')
    assert.equal(stats?.location, path)
    assert.equal(stats?.versions, 2)
    assert.equal(stats?.syncs, 1)
    assert.ok(stats?.lastSuccessAt instanceof Date)
  })

  test('announces reading … done around each sync on the sync-phase channel, a failed one too', async () => {
    const path = join(dir, 'phases.json')
    await writeFile(path, wrapper([srv('io.x/a')]))
    const {syncer} = await rig([{name: 'phases', kind: 'file', path}], {watch: false})
    const {phases: seen, stop} = recordSyncPhases('phases')
    try {
      await syncer.start()
      assert.deepEqual(seen, ['reading', 'staging', 'applying', 'latest', 'rebuilding', 'done'])
      seen.length = 0
      await writeFile(path, 'not json')
      assert.equal((await syncer.syncNow('phases')).failures, 1)
      assert.deepEqual(seen, ['reading', 'done'])
    } finally {
      stop()
    }
  })

  test('loads a plain array, resolving a relative path against baseDir', async () => {
    await writeFile(join(dir, 'plain.json'), JSON.stringify([srv('io.x/plain')]))
    const {syncer, names} = await rig([{name: 'local', kind: 'file', path: 'plain.json'}], {
      baseDir: dir,
      watch: false,
    })
    await syncer.start()
    assert.deepEqual(await names(), ['io.x/plain@1.0.0'])
  })

  test('skips invalid records with a warning naming index and field, and counts them', async () => {
    const path = join(dir, 'some-bad.json')
    await writeFile(
      path,
      JSON.stringify([srv('io.x/ok'), {name: 'two/slash/es', version: '1'}, {name: 'io.x/nov'}]),
    )
    const {syncer, names, logger} = await rig([{name: 'local', kind: 'file', path}], {watch: false})
    await syncer.start()
    assert.deepEqual(await names(), ['io.x/ok@1.0.0'])
    assert.equal(syncer.stats()[0]?.invalidRecords, 2)
    const warnings = logger.lines.filter((l) => l.includes('registry record skipped'))
    assert.equal(warnings.length, 2)
    assert.match(warnings[0] ?? '', /index=1 .*field=name/)
    assert.match(warnings[1] ?? '', /index=2 .*field=version/)
  })

  test('a non-JSON file at startup fails start with ERR_SOURCE_LOAD naming the source and file', async () => {
    const path = join(dir, 'broken.json')
    await writeFile(path, 'this is not json')
    const {syncer} = await rig([{name: 'broken-src', kind: 'file', path}])
    await assert.rejects(syncer.start(), (err) => {
      assert.ok(isToolgateError(err, 'ERR_SOURCE_LOAD'))
      assert.match(err.message, /source "broken-src"/)
      assert.ok(err.message.includes(path), err.message)
      return true
    })
    assert.equal(syncer.isReady(), false)
  })

  test('a missing file at startup fails start naming the file', async () => {
    const path = join(dir, 'does-not-exist.json')
    const {syncer} = await rig([{name: 'gone', kind: 'file', path}])
    await assert.rejects(
      syncer.start(),
      (err) => isToolgateError(err, 'ERR_SOURCE_LOAD') && err.message.includes(path),
    )
  })

  test('a non-JSON file on reload keeps the last good data, logs the error, stays ready', async () => {
    const path = join(dir, 'reload.json')
    await writeFile(path, wrapper([srv('io.x/good')]))
    const {syncer, names, logger} = await rig([{name: 'local', kind: 'file', path}], {watch: false})
    await syncer.start()
    await writeFile(path, '{"data": {"servers": [')
    const stats = await syncer.syncNow('local')
    assert.equal(stats.failures, 1)
    assert.ok(stats.lastError?.includes(path))
    assert.equal(syncer.isReady(), true)
    assert.deepEqual(await names(), ['io.x/good@1.0.0'])
    assert.ok(
      logger.lines.some(
        (l) => l.includes('ERROR') && l.includes('reload failed') && l.includes('source=local'),
      ),
    )
    // The next good read recovers and clears the error.
    await writeFile(path, wrapper([srv('io.x/good'), srv('io.x/new')]))
    const ok = await syncer.syncNow('local')
    assert.equal(ok.lastError, undefined)
    assert.deepEqual(await names(), ['io.x/good@1.0.0', 'io.x/new@1.0.0'])
  })

  test('picks up a change to the file through the watcher (atomic rename included)', async () => {
    const path = join(dir, 'watched.json')
    await writeFile(path, wrapper([srv('io.x/v1')]))
    const {syncer, names} = await rig([{name: 'local', kind: 'file', path}])
    await syncer.start()
    await atomicWriteFile(path, wrapper([srv('io.x/v1'), srv('io.x/v2')]), {mode: 0o644})
    await waitFor('the renamed file to be loaded', async () =>
      (await names()).includes('io.x/v2@1.0.0'),
    )
    await writeFile(path, wrapper([srv('io.x/v3')]))
    await waitFor(
      'the rewritten file to be loaded',
      async () => (await names()).join() === 'io.x/v3@1.0.0',
    )
  })

  test('re-reads the file on the interval when watching is off', async () => {
    const path = join(dir, 'interval.json')
    await writeFile(path, wrapper([srv('io.x/one')]))
    const {syncer, names} = await rig([{name: 'local', kind: 'file', path, syncIntervalMs: 50}], {
      watch: false,
    })
    await syncer.start()
    await writeFile(path, wrapper([srv('io.x/two')]))
    await waitFor('the interval to reload', async () => (await names()).join() === 'io.x/two@1.0.0')
  })

  test('applies filter.names include and exclude globs', async () => {
    const path = join(dir, 'filter.json')
    await writeFile(
      path,
      JSON.stringify([srv('io.github.a/x'), srv('io.github.b/internal-y'), srv('com.example/z')]),
    )
    const {syncer, names} = await rig(
      [
        {
          name: 'local',
          kind: 'file',
          path,
          filter: {names: {include: ['io.github.*'], exclude: ['*/internal-*']}},
        },
      ],
      {watch: false},
    )
    await syncer.start()
    assert.deepEqual(await names(), ['io.github.a/x@1.0.0'])
    assert.equal(syncer.stats()[0]?.filteredOut, 2)
  })

  test('stop() ends interval syncs', async () => {
    const path = join(dir, 'stop.json')
    await writeFile(path, wrapper([srv('io.x/a')]))
    const {syncer} = await rig([{name: 'local', kind: 'file', path, syncIntervalMs: 20}])
    await syncer.start()
    await waitFor('a few interval syncs', () => (syncer.stats()[0]?.syncs ?? 0) >= 3)
    await syncer.stop()
    const count = syncer.stats()[0]?.syncs
    await new Promise((r) => setTimeout(r, 200))
    assert.equal(syncer.stats()[0]?.syncs, count)
  })

  test('a name in two sources of a registry is served from the first source listed', async () => {
    const p1 = join(dir, 'prec-1.json')
    const p2 = join(dir, 'prec-2.json')
    await writeFile(p1, JSON.stringify([srv('io.x/shared', '1.0.0', {title: 'one'})]))
    await writeFile(
      p2,
      JSON.stringify([srv('io.x/shared', '9.0.0', {title: 'two'}), srv('io.x/only2')]),
    )
    const {syncer, names} = await rig(
      [
        {name: 's1', kind: 'file', path: p1},
        {name: 's2', kind: 'file', path: p2},
      ],
      {watch: false},
    )
    await syncer.start()
    assert.deepEqual(await names(), ['io.x/only2@1.0.0', 'io.x/shared@1.0.0'])
  })
})

describe('configuration checks', () => {
  const bad: Array<[string, SourceConfig[], RegExp]> = [
    [
      'an api source without an interval',
      [{name: 'up', kind: 'api', endpoint: 'http://127.0.0.1:1'}],
      /interval/,
    ],
    [
      'a url source without an interval',
      [{name: 'u', kind: 'file', url: 'http://127.0.0.1:1/x.json'}],
      /interval/,
    ],
    [
      'a file source with both path and url',
      [{name: 'f', kind: 'file', path: 'x', url: 'http://127.0.0.1:1/x'}],
      /exactly one/,
    ],
    [
      'a url that is not http(s)',
      [{name: 'f', kind: 'file', url: 'file:///etc/passwd', syncIntervalMs: 1000}],
      /http/,
    ],
    [
      'two sources with one name',
      [
        {name: 'dup', kind: 'file', path: 'a'},
        {name: 'dup', kind: 'file', path: 'b'},
      ],
      /twice/,
    ],
  ]
  for (const [label, sources, message] of bad) {
    test(`refuses ${label}`, async () => {
      const store = new SqliteRegistryStore({path: ':memory:'})
      assert.throws(
        () => new SourceSyncer({store, sources}),
        (err) => isToolgateError(err, 'ERR_CONFIG_INVALID') && message.test(err.message),
      )
    })
  }
})

describe('file sources over http', () => {
  let server: Server
  let base: string
  let body = wrapper([srv('io.x/remote')])
  let status = 200
  let hang = false
  before(async () => {
    ;({server, url: base} = await listen((req, res) => {
      if (hang) return // never answers: the client's timeout must fire
      res.writeHead(status, {'content-type': 'application/json'}).end(body)
    }))
  })
  after(() => closeServer(server))

  test('loads a url source, keeps data on HTTP errors and timeouts, never logs the URL query', async () => {
    const url = `${base}/registry.json?token=s3cr3t-query-token`
    const {syncer, names, logger} = await rig(
      [{name: 'remote', kind: 'file', url, syncIntervalMs: 3_600_000}],
      {
        requestTimeoutMs: 300,
      },
    )
    await syncer.start()
    assert.deepEqual(await names(), ['io.x/remote@1.0.0'])

    status = 503
    const failed = await syncer.syncNow('remote')
    assert.match(failed.lastError ?? '', /HTTP 503/)
    status = 200
    hang = true
    const timedOut = await syncer.syncNow('remote')
    assert.match(timedOut.lastError ?? '', /timed out/)
    hang = false
    assert.deepEqual(await names(), ['io.x/remote@1.0.0'])
    assert.equal(syncer.isReady(), true)

    body = wrapper([srv('io.x/remote', '2.0.0')])
    await syncer.syncNow('remote')
    assert.deepEqual(await names(), ['io.x/remote@2.0.0'])

    const everything = logger.lines.join('\n') + JSON.stringify(syncer.stats())
    assert.ok(!everything.includes('s3cr3t'), 'the query never appears in logs or stats')
    assert.ok(everything.includes(`${base}/registry.json`))
  })

  test('a url source that answers non-JSON at startup fails start naming the URL', async () => {
    body = '<html>oops</html>'
    const {syncer} = await rig([
      {name: 'remote', kind: 'file', url: `${base}/bad.json`, syncIntervalMs: 60_000},
    ])
    await assert.rejects(syncer.start(), (err) => {
      assert.ok(isToolgateError(err, 'ERR_SOURCE_LOAD'))
      assert.ok(
        err.message.includes(`${base}/bad.json`) && err.message.includes('source "remote"'),
        err.message,
      )
      return true
    })
  })
})

describe('one sync per source at a time', () => {
  test('a syncNow during the first sync waits for it, then syncs again; the two never overlap', async () => {
    let inFlight = 0
    let most = 0
    let requests = 0
    let releaseFirst: () => void = () => undefined
    const firstHeld = new Promise<void>((r) => (releaseFirst = r))
    const {server, url} = await listen((req, res) => {
      const n = ++requests
      inFlight++
      most = Math.max(most, inFlight)
      res.on('close', () => inFlight--)
      const answer = () =>
        res
          .writeHead(200, {'content-type': 'application/json'})
          .end(wrapper([srv('io.x/remote', `${n}.0.0`)]))
      if (n === 1) void firstHeld.then(answer)
      else answer()
    })
    try {
      const {syncer, names} = await rig([
        {name: 'remote', kind: 'file', url: `${url}/r.json`, syncIntervalMs: 3_600_000},
      ])
      const starting = syncer.start()
      await waitFor('the first request', () => requests === 1)
      let nowDone = false
      const now = syncer.syncNow('remote').then((stats) => {
        nowDone = true
        return stats
      })
      await new Promise((r) => setTimeout(r, 200))
      assert.equal(requests, 1, 'the second sync waits for the first')
      assert.equal(nowDone, false)
      releaseFirst()
      await starting
      const stats = await now
      assert.equal(requests, 2, 'syncNow synced again after the first sync')
      assert.equal(most, 1, 'never two syncs of one source at once')
      assert.equal(stats.failures, 0)
      assert.deepEqual(await names(), ['io.x/remote@2.0.0'])
    } finally {
      await closeServer(server)
    }
  })
})

describe('api sources', () => {
  // A loopback registry speaking the MCP registry API v0.1 list body, three entries a page.
  let server: Server
  let base: string
  const requests: URL[] = []
  let total = 8
  let loopCursor = false
  const entries = () =>
    Array.from({length: total}, (_, i) => ({
      server: {name: `io.up/s${i}`, version: '1.0.0', description: `upstream ${i}`},
      _meta: {
        [OFFICIAL_META_KEY]: {
          status: i === 0 ? 'deprecated' : 'active',
          publishedAt: '2024-01-02T03:04:05Z',
          updatedAt: '2024-02-02T03:04:05Z',
          isLatest: true,
        },
      },
    }))
  before(async () => {
    ;({server, url: base} = await listen((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x')
      requests.push(url)
      if (url.pathname !== '/mirror/v0.1/servers')
        return void res.writeHead(404).end('{"error":"not found"}')
      const start = Number(url.searchParams.get('cursor') ?? '0')
      const all = entries()
      const page = all.slice(start, start + 3)
      const next = start + 3 < all.length ? String(loopCursor ? 0 : start + 3) : undefined
      const metadata: Record<string, unknown> = {count: page.length}
      if (next !== undefined) metadata.nextCursor = next
      res
        .writeHead(200, {'content-type': 'application/json'})
        .end(JSON.stringify({servers: page, metadata}))
    }))
  })
  after(() => closeServer(server))

  test('pages through <endpoint>/v0.1/servers with limit=100 following nextCursor, keeping upstream _meta', async () => {
    requests.length = 0
    const {syncer, names, store} = await rig([
      {name: 'upstream', kind: 'api', endpoint: `${base}/mirror/`, syncIntervalMs: 3_600_000},
    ])
    await syncer.start()
    assert.deepEqual(
      requests.map((u) => [u.searchParams.get('limit'), u.searchParams.get('cursor')]),
      [
        ['100', null],
        ['100', '3'],
        ['100', '6'],
      ],
    )
    assert.equal((await names()).length, 8)
    const first = await store.getVersion('default', 'io.up/s0', '1.0.0')
    assert.deepEqual(first?._meta[OFFICIAL_META_KEY], {
      status: 'deprecated',
      publishedAt: '2024-01-02T03:04:05.000Z',
      updatedAt: '2024-02-02T03:04:05.000Z',
      isLatest: true,
    })
    assert.equal(first?.server._meta, undefined)

    total = 4
    const stats = await syncer.syncNow('upstream')
    assert.equal(stats.versions, 4)
    assert.equal((await names()).length, 4)
  })

  test('an upstream that repeats a cursor is an error, not an endless loop', async () => {
    total = 8
    loopCursor = true
    try {
      const {syncer} = await rig([
        {name: 'upstream', kind: 'api', endpoint: `${base}/mirror`, syncIntervalMs: 60_000},
      ])
      await assert.rejects(
        syncer.start(),
        (err) => isToolgateError(err, 'ERR_SOURCE_LOAD') && /cursor/.test(err.message),
      )
    } finally {
      loopCursor = false
    }
  })

  test('the page count is bounded', async () => {
    total = 8
    const {syncer} = await rig(
      [{name: 'upstream', kind: 'api', endpoint: `${base}/mirror`, syncIntervalMs: 60_000}],
      {
        maxApiPages: 2,
      },
    )
    await assert.rejects(
      syncer.start(),
      (err) => isToolgateError(err, 'ERR_SOURCE_LOAD') && /2 pages/.test(err.message),
    )
  })

  test('a wrong endpoint fails start naming the source and the endpoint', async () => {
    const {syncer} = await rig([
      {name: 'upstream', kind: 'api', endpoint: `${base}/nowhere`, syncIntervalMs: 60_000},
    ])
    await assert.rejects(syncer.start(), (err) => {
      assert.ok(isToolgateError(err, 'ERR_SOURCE_LOAD'))
      assert.ok(
        err.message.includes('source "upstream"') && err.message.includes(`${base}/nowhere`),
        err.message,
      )
      assert.match(err.message, /HTTP 404/)
      return true
    })
  })
})
