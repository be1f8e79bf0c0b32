import {test, describe, before, after} from 'node:test'
import assert from 'node:assert/strict'
import {mkdtemp, rm, stat} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {SqliteRegistryStore} from '../../../src/lib/registry/sqlite-store.ts'
import {encodeCursor} from '../../../src/lib/registry/cursor.ts'
import {recordSyncPhases} from '../../helpers/sync-phases.ts'
import {isToolgateError, ToolgateError} from '../../../src/lib/errors.ts'
import {
  describeEachBackend,
  stopStoreBackends,
  type TestStore,
} from '../../helpers/store-backends.ts'
import {
  OFFICIAL_META_KEY,
  type ServerEntry,
  type ServerJson,
} from '../../../src/lib/registry/types.ts'

const T0 = new Date('2025-01-01T00:00:00.000Z')
const T1 = new Date('2025-02-01T00:00:00.000Z')
const T2 = new Date('2025-03-01T00:00:00.000Z')

const official = (e: ServerEntry) => e._meta[OFFICIAL_META_KEY]
const ids = (entries: ServerEntry[]) => entries.map((e) => `${e.server.name}@${e.server.version}`)

after(() => stopStoreBackends())

function server(name: string, version: string, extra: Partial<ServerJson> = {}): ServerJson {
  return {name, version, description: `The ${name} server`, ...extra}
}

async function listAll(store: TestStore, registry: string, limit: number, q = {}) {
  const seen: ServerEntry[] = []
  let cursor: string | undefined
  let pages = 0
  do {
    const page = await store.listServers(registry, {limit, cursor, ...q})
    assert.ok(page.servers.length <= limit)
    seen.push(...page.servers)
    cursor = page.nextCursor
    if (cursor) assert.equal(page.servers.length, limit, 'only the last page may be short')
    assert.ok(++pages < 10_000, 'pagination terminates')
  } while (cursor)
  return seen
}

// One set of cases, run on every backend (SQLite and PostgreSQL answer identically).
describeEachBackend('registry store listing', (backend) => {
  let store: TestStore
  const names = ['io.b/zeta', 'io.a/alpha', 'io.a/beta', 'com.example/weather', 'io.a/Alpha2']
  before(async () => {
    store = await backend.open()
    const servers: ServerJson[] = []
    for (const n of names) for (const v of ['1.0.0', '1.10.0', '1.2.0']) servers.push(server(n, v))
    servers.push(server('io.c/tools', '2024-06', {title: 'Weather Tools', description: 'misc'}))
    servers.push(server('io.c/tools', '2024-07', {title: 'Weather Tools', description: 'misc'}))
    await store.replaceSource('a', servers, T0)
  })
  after(() => store.close())

  test('orders by name then version (binary order)', async () => {
    const all = await listAll(store, 'default', 100)
    const sorted = [...all].sort((x, y) =>
      x.server.name === y.server.name
        ? x.server.version < y.server.version
          ? -1
          : 1
        : x.server.name < y.server.name
          ? -1
          : 1,
    )
    assert.deepEqual(ids(all), ids(sorted))
    assert.equal(all.length, 17)
  })

  for (const limit of [1, 2, 3, 5, 16, 17, 18, 100]) {
    test(`keyset pages of ${limit} cover every version exactly once`, async () => {
      const all = await listAll(store, 'default', limit)
      assert.equal(all.length, 17)
      assert.equal(new Set(ids(all)).size, 17)
    })
  }

  test('gives no nextCursor when the page holds the last row', async () => {
    const page = await store.listServers('default', {limit: 17})
    assert.equal(page.servers.length, 17)
    assert.equal(page.nextCursor, undefined)
  })

  const tampered: Array<[string, string]> = [
    ['random text', 'hello world'],
    ['base64 of non-JSON', Buffer.from('not json').toString('base64url')],
    ['a JSON object', Buffer.from('{"name":"io.a/alpha"}').toString('base64url')],
    ['an invalid server name', Buffer.from('["bad name","1.0.0"]').toString('base64url')],
    ['an empty version', Buffer.from('["io.a/alpha",""]').toString('base64url')],
    ['three elements', Buffer.from('["io.a/alpha","1","x"]').toString('base64url')],
    ['non-canonical base64', encodeCursor({name: 'io.a/alpha', version: '1.0.0'}) + '='],
    ['an overlong value', 'A'.repeat(5000)],
  ]
  for (const [label, cursor] of tampered) {
    test(`refuses a cursor that is ${label} with ERR_BAD_PARAMETER naming cursor`, async () => {
      await assert.rejects(store.listServers('default', {limit: 5, cursor}), (err) => {
        assert.ok(isToolgateError(err, 'ERR_BAD_PARAMETER'))
        assert.match(err.message, /cursor/)
        return true
      })
    })
  }

  test('a cursor for a position between rows continues after it', async () => {
    const page = await store.listServers('default', {
      limit: 2,
      cursor: encodeCursor({name: 'io.a/alpha', version: '1.1'}),
    })
    assert.deepEqual(ids(page.servers), ['io.a/alpha@1.10.0', 'io.a/alpha@1.2.0'])
  })

  test('search is a case-insensitive substring of name, title and description', async () => {
    assert.deepEqual(
      [
        ...new Set(
          (await listAll(store, 'default', 100, {search: 'ALPHA'})).map((e) => e.server.name),
        ),
      ],
      ['io.a/Alpha2', 'io.a/alpha'],
    )
    // title match
    assert.deepEqual(
      [
        ...new Set(
          (await listAll(store, 'default', 100, {search: 'weather tools'})).map(
            (e) => e.server.name,
          ),
        ),
      ],
      ['io.c/tools'],
    )
    // description match ("The com.example/weather server"), and a name match for "weather"
    assert.deepEqual(
      [
        ...new Set(
          (await listAll(store, 'default', 100, {search: 'weather'})).map((e) => e.server.name),
        ),
      ],
      ['com.example/weather', 'io.c/tools'],
    )
    assert.equal(
      (await listAll(store, 'default', 100, {search: '%'})).length,
      0,
      'no wildcard meaning',
    )
  })

  test('version=latest returns one version per server: highest semver, else newest published', async () => {
    const latest = await listAll(store, 'default', 2, {version: 'latest'})
    assert.deepEqual(ids(latest), [
      'com.example/weather@1.10.0',
      'io.a/Alpha2@1.10.0',
      'io.a/alpha@1.10.0',
      'io.a/beta@1.10.0',
      'io.b/zeta@1.10.0',
      // both published at T0: the tie is broken by version text
      'io.c/tools@2024-07',
    ])
    assert.ok(latest.every((e) => official(e).isLatest))
  })

  test('an exact version filter returns only that version', async () => {
    const got = await listAll(store, 'default', 2, {version: '1.2.0'})
    assert.equal(got.length, 5)
    assert.ok(got.every((e) => e.server.version === '1.2.0'))
  })

  test('unknown registry is ERR_REGISTRY_NOT_FOUND', async () => {
    await assert.rejects(store.listServers('nope', {limit: 5}), (err) =>
      isToolgateError(err, 'ERR_REGISTRY_NOT_FOUND'),
    )
    assert.equal(store.hasRegistry('nope'), false)
    assert.equal(store.hasRegistry('default'), true)
  })

  test('listVersions and getVersion (latest allowed) answer per server', async () => {
    const versions = await store.listVersions('default', 'io.a/alpha')
    assert.deepEqual(ids(versions ?? []), [
      'io.a/alpha@1.0.0',
      'io.a/alpha@1.10.0',
      'io.a/alpha@1.2.0',
    ])
    assert.equal(await store.listVersions('default', 'io.a/none'), undefined)
    assert.equal(
      (await store.getVersion('default', 'io.a/alpha', 'latest'))?.server.version,
      '1.10.0',
    )
    assert.equal(
      (await store.getVersion('default', 'io.a/alpha', '1.2.0'))?.server.version,
      '1.2.0',
    )
    assert.equal(await store.getVersion('default', 'io.a/alpha', '9.9.9'), undefined)
  })
})

describeEachBackend('registry store sync semantics', (backend) => {
  test('publishes the phases of a sync on the sync-phase diagnostics channel', async () => {
    const store = await backend.open([{name: 'default', sources: ['phased']}])
    const {phases: seen, stop} = recordSyncPhases('phased')
    try {
      await store.replaceSource('phased', [server('io.x/a', '1.0.0')], T0)
      assert.deepEqual(seen, ['staging', 'applying', 'latest', 'rebuilding'])
      // Nothing changed: no isLatest or registry work, so those phases are not announced.
      seen.length = 0
      await store.replaceSource('phased', [server('io.x/a', '1.0.0')], T1)
      assert.deepEqual(seen, ['staging', 'applying'])
    } finally {
      stop()
    }
  })

  test('the first source listed wins for a name present in two sources, with all its versions', async () => {
    const store = await backend.open([
      {name: 'default', sources: ['first', 'second']},
      {name: 'reversed', sources: ['second', 'first']},
    ])
    await store.replaceSource(
      'second',
      [
        server('io.x/shared', '1.0.0'),
        server('io.x/shared', '2.0.0'),
        server('io.x/only2', '1.0.0'),
      ],
      T0,
    )
    await store.replaceSource(
      'first',
      [server('io.x/shared', '1.5.0', {title: 'from first'}), server('io.x/only1', '1.0.0')],
      T0,
    )
    assert.deepEqual(ids(await listAll(store, 'default', 10)), [
      'io.x/only1@1.0.0',
      'io.x/only2@1.0.0',
      'io.x/shared@1.5.0',
    ])
    assert.deepEqual(ids(await listAll(store, 'reversed', 10)), [
      'io.x/only1@1.0.0',
      'io.x/only2@1.0.0',
      'io.x/shared@1.0.0',
      'io.x/shared@2.0.0',
    ])
    // When the first source drops the name, the second source's versions show through.
    await store.replaceSource('first', [server('io.x/only1', '1.0.0')], T1)
    assert.deepEqual(ids(await listAll(store, 'default', 10)), [
      'io.x/only1@1.0.0',
      'io.x/only2@1.0.0',
      'io.x/shared@1.0.0',
      'io.x/shared@2.0.0',
    ])
    // Changing the source order of a registry re-materialises it.
    await store.replaceSource('first', [server('io.x/shared', '1.5.0')], T1)
    await store.setRegistries([{name: 'default', sources: ['second', 'first']}])
    assert.deepEqual(ids(await listAll(store, 'default', 10)), [
      'io.x/only2@1.0.0',
      'io.x/shared@1.0.0',
      'io.x/shared@2.0.0',
    ])
    assert.equal(store.hasRegistry('reversed'), false)
    await store.close()
  })

  test('publishedAt is kept for unchanged versions; updatedAt moves only when the document changes', async () => {
    const store = await backend.open()
    const s1 = await store.replaceSource(
      'a',
      [server('io.x/a', '1.0.0'), server('io.x/b', '1.0.0')],
      T0,
    )
    assert.deepEqual(
      {added: s1.added, updated: s1.updated, removed: s1.removed},
      {added: 2, updated: 0, removed: 0},
    )
    const s2 = await store.replaceSource(
      'a',
      [
        server('io.x/a', '1.0.0'),
        server('io.x/b', '1.0.0', {description: 'changed'}),
        server('io.x/c', '1.0.0'),
      ],
      T1,
    )
    assert.deepEqual(
      {added: s2.added, updated: s2.updated, removed: s2.removed},
      {added: 1, updated: 1, removed: 0},
    )
    const a = official((await store.getVersion('default', 'io.x/a', '1.0.0'))!)
    const b = official((await store.getVersion('default', 'io.x/b', '1.0.0'))!)
    const c = official((await store.getVersion('default', 'io.x/c', '1.0.0'))!)
    assert.deepEqual([a.publishedAt, a.updatedAt], [T0.toISOString(), T0.toISOString()])
    assert.deepEqual([b.publishedAt, b.updatedAt], [T0.toISOString(), T1.toISOString()])
    assert.deepEqual([c.publishedAt, c.updatedAt], [T1.toISOString(), T1.toISOString()])
    assert.equal(a.status, 'active')

    const since = await listAll(store, 'default', 10, {updatedSince: T0})
    assert.deepEqual(
      ids(since),
      ['io.x/b@1.0.0', 'io.x/c@1.0.0'],
      'updated_since is strictly after',
    )
    assert.equal((await listAll(store, 'default', 10, {updatedSince: T1})).length, 0)

    const s3 = await store.replaceSource('a', [server('io.x/c', '1.0.0')], T2)
    assert.deepEqual(
      {added: s3.added, updated: s3.updated, removed: s3.removed, versions: s3.versions},
      {added: 0, updated: 0, removed: 2, versions: 1},
    )
    assert.equal(await store.getVersion('default', 'io.x/a', '1.0.0'), undefined)
    assert.equal(await store.countVersions(), 1)
    await store.close()
  })

  test('isLatest follows new versions and removals', async () => {
    const store = await backend.open()
    await store.replaceSource('a', [server('io.x/a', '1.0.0')], T0)
    assert.equal(official((await store.getVersion('default', 'io.x/a', '1.0.0'))!).isLatest, true)
    await store.replaceSource('a', [server('io.x/a', '1.0.0'), server('io.x/a', '1.1.0')], T1)
    assert.equal(official((await store.getVersion('default', 'io.x/a', '1.0.0'))!).isLatest, false)
    assert.equal((await store.getVersion('default', 'io.x/a', 'latest'))?.server.version, '1.1.0')
    await store.replaceSource('a', [server('io.x/a', '1.0.0')], T2)
    assert.equal((await store.getVersion('default', 'io.x/a', 'latest'))?.server.version, '1.0.0')
    await store.close()
  })

  // Enough changed names for several isLatest batches (1,000 names each on PostgreSQL): first
  // whole batches of names whose every version was removed, then batches that each move flags
  // (one batch's update in flight while the next batch is read); the names after them are all
  // judged.
  test('isLatest is recomputed for every changed name of a large sync, after whole batches of removed names', async (t) => {
    const store = await backend.open()
    t.after(() => store.close())
    const gone = Array.from({length: 2_100}, (_, i) => `io.a/gone-${String(i).padStart(4, '0')}`)
    const kept = Array.from({length: 2_500}, (_, i) => `io.z/kept-${String(i).padStart(4, '0')}`)
    await store.replaceSource(
      'a',
      [
        ...gone.map((n) => server(n, '1.0.0')),
        ...kept.flatMap((n) => [server(n, '1.0.0'), server(n, '2.0.0')]),
      ],
      T0,
    )
    const stats = await store.replaceSource(
      'a',
      kept.flatMap((n) => [server(n, '1.0.0'), server(n, '2.0.0'), server(n, '3.0.0')]),
      T1,
    )
    assert.deepEqual({added: stats.added, removed: stats.removed}, {added: 2_500, removed: 2_100})
    const latest = await listAll(store, 'default', 100, {version: 'latest'})
    assert.deepEqual(
      ids(latest),
      kept.map((n) => `${n}@3.0.0`),
    )
    for (const n of [kept[0]!, kept[999]!, kept[1_000]!, kept.at(-1)!])
      assert.equal(official((await store.getVersion('default', n, '2.0.0'))!).isLatest, false, n)
  })

  test('a publishedAt or trusted isLatest change moves the latest version; a document change does not', async () => {
    const store = await backend.open()
    // Versions that are not semver: the most recently published is latest (latest.ts).
    const at = (publishedAt: string, extra: Record<string, unknown> = {}) => ({
      _meta: {[OFFICIAL_META_KEY]: {publishedAt, updatedAt: publishedAt, ...extra}},
    })
    const latest = async () => (await store.getVersion('default', 'io.x/a', 'latest'))?.server
    // One trusted sync of the two versions, each with its own fields.
    const sync = (alpha: Partial<ServerJson>, beta: Partial<ServerJson>, now: Date) =>
      store.replaceSource(
        'a',
        [server('io.x/a', 'alpha', alpha), server('io.x/a', 'beta', beta)],
        now,
        {trustOfficialMeta: true},
      )
    await sync(at('2024-01-01T00:00:00Z'), at('2024-02-01T00:00:00Z'), T0)
    assert.equal((await latest())?.version, 'beta')
    // Only a document changes: the latest version stays.
    await sync({title: 'new title', ...at('2024-01-01T00:00:00Z')}, at('2024-02-01T00:00:00Z'), T1)
    assert.equal((await latest())?.version, 'beta')
    // alpha republished after beta: it becomes latest.
    await sync({title: 'new title', ...at('2024-03-01T00:00:00Z')}, at('2024-02-01T00:00:00Z'), T1)
    assert.equal((await latest())?.version, 'alpha')
    assert.equal(official((await store.getVersion('default', 'io.x/a', 'beta'))!).isLatest, false)
    // A trusted upstream flags beta, with a new updatedAt: its flag is believed.
    await sync(
      {title: 'new title', ...at('2024-03-01T00:00:00Z', {isLatest: false})},
      {
        _meta: {
          [OFFICIAL_META_KEY]: {
            publishedAt: '2024-02-01T00:00:00Z',
            updatedAt: '2024-04-01T00:00:00Z',
            isLatest: true,
          },
        },
      },
      T2,
    )
    assert.equal((await latest())?.version, 'beta')
    await store.close()
  })

  test('a trusted isLatest flag that vanishes leaves the choice to the rule again', async () => {
    const meta = (publishedAt: string, isLatest?: boolean) => ({
      _meta: {
        [OFFICIAL_META_KEY]: {publishedAt, ...(isLatest === undefined ? {} : {isLatest})},
      },
    })
    const first = [
      server('io.x/a', '1.0.0', meta('2024-01-01T00:00:00Z', true)),
      server('io.x/a', '2.0.0', meta('2024-02-01T00:00:00Z', false)),
    ]
    // The next sync changes 2.0.0's document only; its flag is gone (still trusted), or the
    // source is no longer trusted at all. Either way the highest semver is latest again.
    for (const [label, second, options] of [
      [
        'trusted, no flag',
        [first[0]!, server('io.x/a', '2.0.0', {title: 'new', ...meta('2024-02-01T00:00:00Z')})],
        {trustOfficialMeta: true},
      ],
      ['untrusted', [server('io.x/a', '1.0.0'), server('io.x/a', '2.0.0', {title: 'new'})], {}],
    ] as const) {
      const store = await backend.open()
      await store.replaceSource('a', first, T0, {trustOfficialMeta: true})
      assert.equal((await store.getVersion('default', 'io.x/a', 'latest'))?.server.version, '1.0.0')
      await store.replaceSource('a', [...second], T1, options)
      assert.equal(
        (await store.getVersion('default', 'io.x/a', 'latest'))?.server.version,
        '2.0.0',
        label,
      )
      await store.close()
    }
  })

  test('a source that fails while being read changes nothing, and the store keeps working', async () => {
    const store = await backend.open()
    await store.replaceSource('a', [server('io.x/kept', '1.0.0')], T0)
    // Enough records for several staging slices (COPY chunks on PostgreSQL) before the failure.
    function* failing(): Generator<ServerJson> {
      for (let i = 0; i < 1200; i++) yield server(`io.x/n${i}`, '1.0.0')
      // What the file loader throws when the file changes under it (sources/document.ts).
      throw new ToolgateError('ERR_SOURCE_LOAD', 'registry.json: changed while being loaded')
    }
    await assert.rejects(store.replaceSource('a', failing(), T1), {
      code: 'ERR_SOURCE_LOAD',
      message: 'registry.json: changed while being loaded',
    })
    assert.deepEqual(ids(await listAll(store, 'default', 10)), ['io.x/kept@1.0.0'])
    await store.replaceSource('a', [server('io.x/kept', '1.0.0'), server('io.x/new', '1.0.0')], T2)
    assert.deepEqual(ids(await listAll(store, 'default', 10)), [
      'io.x/kept@1.0.0',
      'io.x/new@1.0.0',
    ])
    await store.close()
  })

  test("text holding COPY's structural characters is stored and searched as sent", async () => {
    const store = await backend.open()
    const tricky = 'tab\there, line\nbreak, return\rhere, back\\slash, \\N null marker, é ✓ 😀'
    await store.replaceSource(
      'a',
      [server('io.x/a', '1.0.0', {title: 'Tab\tTitle', description: tricky})],
      T0,
    )
    const entry = (await store.getVersion('default', 'io.x/a', '1.0.0'))!
    assert.equal(entry.server.description, tricky)
    assert.equal(entry.server.title, 'Tab\tTitle')
    assert.equal(await store.getVersionText('default', 'io.x/a', '1.0.0'), JSON.stringify(entry))
    for (const term of ['\\n null', 'line\nbreak', 'tab\t', 'return\rhere', '😀']) {
      const page = await store.listServers('default', {limit: 10, search: term})
      assert.deepEqual(ids(page.servers), ['io.x/a@1.0.0'], JSON.stringify(term))
    }
    await store.close()
  })

  test('an incoming official _meta block is stripped; other _meta keys are kept', async () => {
    const store = await backend.open()
    const forged = {
      status: 'deprecated',
      publishedAt: '2000-01-01T00:00:00Z',
      updatedAt: '2000-01-01T00:00:00Z',
      isLatest: false,
    }
    await store.replaceSource(
      'a',
      [
        server('io.x/a', '1.0.0', {
          _meta: {[OFFICIAL_META_KEY]: forged, 'io.example/custom': {x: 1}},
        }),
        server('io.x/b', '1.0.0', {_meta: {[OFFICIAL_META_KEY]: forged}}),
      ],
      T0,
    )
    const a = (await store.getVersion('default', 'io.x/a', '1.0.0'))!
    assert.deepEqual(a.server._meta, {'io.example/custom': {x: 1}})
    assert.deepEqual(official(a), {
      status: 'active',
      publishedAt: T0.toISOString(),
      updatedAt: T0.toISOString(),
      isLatest: true,
    })
    const b = (await store.getVersion('default', 'io.x/b', '1.0.0'))!
    assert.equal('_meta' in b.server, false)
    await store.close()
  })

  test('a trusted upstream official block (api sources) is respected', async () => {
    const store = await backend.open()
    const meta = (status: string, at: string, isLatest: boolean) => ({
      _meta: {[OFFICIAL_META_KEY]: {status, publishedAt: at, updatedAt: at, isLatest}},
    })
    await store.replaceSource(
      'a',
      [
        server('io.x/a', '1.0.0', meta('deprecated', '2024-05-01T10:00:00.123456Z', false)),
        server('io.x/a', '0.9.0', meta('active', '2024-04-01T10:00:00Z', true)),
      ],
      T0,
      {trustOfficialMeta: true},
    )
    const v1 = official((await store.getVersion('default', 'io.x/a', '1.0.0'))!)
    assert.deepEqual(v1, {
      status: 'deprecated',
      publishedAt: '2024-05-01T10:00:00.123Z',
      updatedAt: '2024-05-01T10:00:00.123Z',
      isLatest: false,
    })
    assert.equal((await store.getVersion('default', 'io.x/a', 'latest'))?.server.version, '0.9.0')
    await store.close()
  })

  test('invalid and duplicate records are skipped and counted, the rest stored', async () => {
    const store = await backend.open()
    const stats = await store.replaceSource(
      'a',
      [
        server('io.x/a', '1.0.0', {title: 'first'}),
        server('io.x/a', '1.0.0', {title: 'duplicate'}),
        server('bad name', '1.0.0'),
        server('io.x/b', ''),
        server('io.x/c', 'latest'),
      ],
      T0,
    )
    assert.equal(stats.versions, 1)
    assert.equal(stats.skipped, 4)
    assert.equal((await store.getVersion('default', 'io.x/a', '1.0.0'))?.server.title, 'first')
    await store.close()
  })

  test('retainSources drops the data of sources no longer configured', async () => {
    const store = await backend.open([{name: 'default', sources: ['a', 'gone']}])
    await store.replaceSource('a', [server('io.x/a', '1.0.0')], T0)
    await store.replaceSource('gone', [server('io.x/g', '1.0.0')], T0)
    assert.equal(await store.countRegistryVersions('default'), 2)
    await store.retainSources!(['a'])
    assert.equal(await store.countVersions(), 1)
    assert.deepEqual(ids(await listAll(store, 'default', 10)), ['io.x/a@1.0.0'])
    await store.close()
  })
})

describe('SqliteRegistryStore query plans', () => {
  test('list queries are index range scans (no full scan, no temp sort)', async () => {
    const store = new SqliteRegistryStore({path: ':memory:'})
    await store.init()
    await store.setRegistries([{name: 'default', sources: ['a']}])
    for (const q of [{limit: 30}, {limit: 30, version: 'latest'}]) {
      const plan = store.explainList('default', q).join('\n')
      assert.match(plan, /SEARCH re USING (PRIMARY KEY|INDEX)/)
      assert.doesNotMatch(plan, /SCAN re|TEMP B-TREE/)
    }
    await store.close()
  })
})

describe('SqliteRegistryStore on disk', () => {
  let dir: string
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolgate-store-'))
  })
  after(() => rm(dir, {recursive: true, force: true}))

  test('creates its directory 0700, runs migrations once, and keeps data across reopen', async () => {
    const path = join(dir, 'nested', 'registry.db')
    const s1 = new SqliteRegistryStore({path})
    await s1.init()
    await s1.init() // idempotent on an open store
    assert.equal((await stat(join(dir, 'nested'))).mode & 0o777, 0o700)
    assert.deepEqual(s1.schemaVersions(), [1, 2, 3, 4])
    await s1.setRegistries([{name: 'default', sources: ['a']}])
    await s1.replaceSource('a', [server('io.x/a', '1.0.0')], T0)
    await s1.ping()
    await s1.close()

    const s2 = new SqliteRegistryStore({path})
    await s2.init()
    assert.deepEqual(s2.schemaVersions(), [1, 2, 3, 4], 'no migration ran twice')
    assert.equal(s2.hasRegistry('default'), true, 'registries persist')
    const got = await s2.getVersion('default', 'io.x/a', '1.0.0')
    assert.equal(official(got!).publishedAt, T0.toISOString())
    // Re-declaring the same registries keeps the data.
    await s2.setRegistries([{name: 'default', sources: ['a']}])
    assert.equal(await s2.countVersions(), 1)
    await s2.close()
    await assert.rejects(s2.ping(), (err) => isToolgateError(err, 'ERR_STORAGE'))
  })

  test('fails with ERR_STORAGE naming the path when the database cannot be opened', async () => {
    const store = new SqliteRegistryStore({path: join(dir, 'missing-dir-as-file')})
    // A directory where the database file should be.
    const {mkdir} = await import('node:fs/promises')
    await mkdir(join(dir, 'missing-dir-as-file'))
    await assert.rejects(store.init(), (err) => {
      assert.ok(isToolgateError(err, 'ERR_STORAGE'))
      assert.match(err.message, /missing-dir-as-file/)
      return true
    })
  })
})
