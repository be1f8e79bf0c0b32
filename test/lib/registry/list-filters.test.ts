/**
 * List filters (`transport`, `type`, `registryType`; issue 36) on both stores, against a generated
 * 10,000-version registry: every page of every filter combination — alone and with `search`,
 * `version=latest` and a cursor — holds exactly the expected entries, in order, without duplicates
 * or gaps. And the migration that fills `traits` for rows stored before it computes, in SQL, what
 * traitsOf computes in JS, for ordinary and malformed documents alike.
 */
import {after, describe, test} from 'node:test'
import assert from 'node:assert/strict'
import {DatabaseSync} from 'node:sqlite'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {
  STORE_BACKENDS,
  pgCluster,
  pgDatabase,
  stopStoreBackends,
  type TestStore,
} from '../../helpers/store-backends.ts'
import {postgresMissing} from '../../helpers/postgres.ts'
import {traitsOf} from '../../../src/lib/registry/traits.ts'
import {SqliteRegistryStore} from '../../../src/lib/registry/sqlite-store.ts'
import {PostgresRegistryStore} from '../../../src/lib/registry/postgres-store.ts'
import {parseListQuery} from '../../../src/lib/registry-api/query.ts'
import type {ListQuery, ServerJson} from '../../../src/lib/registry/types.ts'

after(() => stopStoreBackends())

const T0 = new Date('2026-01-01T00:00:00Z')
const TRANSPORTS = ['stdio', 'streamable-http', 'sse']
const TYPES = ['npm', 'pypi', 'oci', 'nuget', 'mcpb']

/** 2,500 names × 4 versions, with packages and remotes varying by name and version. */
function generated(): ServerJson[] {
  const out: ServerJson[] = []
  for (let i = 0; i < 2500; i++) {
    for (let v = 0; v < 4; v++) {
      const name = `io.gen${i % 7}/server-${String(i).padStart(5, '0')}`
      const packages =
        (i + v) % 5 === 0
          ? []
          : [
              {
                registryType: TYPES[(i * 3 + v) % TYPES.length],
                identifier: `pkg-${i}`,
                transport: {type: TRANSPORTS[(i + v) % 3 === 0 ? 2 : i % 2]},
              },
            ]
      const remotes =
        i % 11 === v ? [{type: i % 2 ? 'sse' : 'streamable-http', url: 'https://r.example'}] : []
      out.push({
        name,
        version: `1.${v}.0`,
        description: i % 13 === 0 ? 'Weather and maps' : 'Something else',
        packages,
        remotes,
      })
    }
  }
  return out
}

const DATA = generated()

function expected(query: ListQuery & {traitsOf?: number}): string[] {
  const latest = new Map<string, string>()
  for (const s of DATA) latest.set(s.name, s.version) // versions ascend: the last one is latest
  return DATA.filter((s) => {
    if (query.version === 'latest' && latest.get(s.name) !== s.version) return false
    if (
      query.search &&
      !`${s.name}\n\n${s.description}`.toLowerCase().includes(query.search.toLowerCase())
    )
      return false
    const t = query.traits ?? 0
    return (traitsOf(s) & t) === t
  })
    .map((s) => `${s.name}@${s.version}`)
    .sort((a, b) => {
      const [an, av] = a.split('@') as [string, string]
      const [bn, bv] = b.split('@') as [string, string]
      return an < bn ? -1 : an > bn ? 1 : av < bv ? -1 : av > bv ? 1 : 0
    })
}

async function walk(store: TestStore, query: ListQuery): Promise<string[]> {
  const got: string[] = []
  let cursor: string | undefined
  for (let guard = 0; guard < 20_000; guard++) {
    const page = await store.listServers('default', {...query, ...(cursor ? {cursor} : {})})
    for (const e of page.servers) got.push(`${e.server.name}@${e.server.version}`)
    if (!page.nextCursor) return got
    cursor = page.nextCursor
  }
  throw new Error('paging did not end')
}

const QUERIES = [
  'transport=stdio',
  'transport=sse',
  'transport=streamable-http&version=latest',
  'type=remote',
  'type=package&registryType=pypi',
  'registryType=mcpb&transport=sse',
  'transport=stdio&version=latest&search=weather',
  'type=remote&registryType=oci&transport=sse',
  'type=remote&type=package',
]

for (const backend of STORE_BACKENDS) {
  describe(`list filters × paging (${backend.name})`, {skip: backend.skip}, () => {
    test('every page of every filter is exactly right: no duplicates, no gaps', async () => {
      const store = await backend.open()
      try {
        await store.replaceSource('a', DATA, T0)
        for (const q of QUERIES) {
          // A repeated parameter is refused (which value was meant?), as for every other one.
          if (q === 'type=remote&type=package') {
            assert.throws(() => parseListQuery(q), /type: must be given at most once/)
            continue
          }
          const parsed = parseListQuery(q)
          const want = expected(parsed)
          assert.ok(
            want.length > 0 || q.includes('transport=stdio&transport=sse'),
            `${q} matches something`,
          )
          for (const limit of [7, 100]) {
            const got = await walk(store, {...parsed, limit})
            assert.equal(new Set(got).size, got.length, `${q} limit ${limit}: duplicates`)
            assert.deepEqual(got, want, `${q} limit ${limit}`)
          }
        }
      } finally {
        await store.close()
      }
    })
  })
}

test('filter parameters: bad values are a 400 naming the values there are', () => {
  assert.throws(
    () => parseListQuery('transport=carrier'),
    /transport: must be one of stdio, streamable-http, sse, got "carrier"/,
  )
  assert.throws(() => parseListQuery('type=binary'), /type: must be one of package, remote/)
  assert.throws(
    () => parseListQuery('registryType=cargo'),
    /registryType: must be one of npm, pypi, oci, nuget, mcpb/,
  )
  assert.equal(parseListQuery('transport=stdio&registryType=npm').traits, 1 | 32)
})

/** Documents whose traits the SQL of the migrations must compute exactly as traitsOf does. */
const ODD: ServerJson[] = [
  {name: 'io.t/none', version: '1'},
  {name: 'io.t/empty', version: '1', packages: [], remotes: []},
  {
    name: 'io.t/obj',
    version: '1',
    packages: {registryType: 'npm', transport: {type: 'stdio'}} as never,
  },
  {name: 'io.t/scalar', version: '1', packages: 'npm' as never, remotes: 7 as never},
  {
    name: 'io.t/mixed',
    version: '1',
    packages: [null, 'x', [1], {registryType: 'npm'}, {transport: {type: 'sse'}}] as never,
  },
  {
    name: 'io.t/unknown',
    version: '1',
    packages: [{registryType: 'cargo', transport: {type: 'websocket'}}],
  },
  {
    name: 'io.t/remote',
    version: '1',
    remotes: [
      {type: 'stdio', url: 'x'},
      {type: 'streamable-http', url: 'y'},
    ],
  },
  {name: 'io.t/typed', version: '1', packages: [{registryType: 'NPM', transport: {type: 'STDIO'}}]},
  // PostgreSQL's jsonb refuses these two: the backfill must not depend on it.
  {
    name: 'io.t/nul',
    version: '1',
    description: 'a\u0000b',
    packages: [{registryType: 'npm', transport: {type: 'stdio'}}],
  },
  {name: 'io.t/surrogate', version: '1', description: '\ud800', remotes: [{type: 'sse', url: 'x'}]},
  ...DATA.slice(0, 40),
]

describe('the traits migrations fill in what traitsOf computes (SQLite in SQL, PostgreSQL in JS)', () => {
  test('SQLite: a database from before traits is filled in at open', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-traits-'))
    try {
      const path = join(dir, 'r.db')
      const first = new SqliteRegistryStore({path})
      await first.init()
      await first.setRegistries([{name: 'default', sources: ['a']}])
      await first.replaceSource('a', ODD, T0)
      await first.close()
      const db = new DatabaseSync(path)
      db.exec(
        'ALTER TABLE source_versions DROP COLUMN traits; ALTER TABLE registry_entries DROP COLUMN traits; ' +
          'DELETE FROM schema_migrations WHERE version = 4',
      )
      db.close()
      const upgraded = new SqliteRegistryStore({path})
      await upgraded.init()
      await upgraded.close()
      const check = new DatabaseSync(path)
      const rows = check
        .prepare(
          'SELECT sv.name AS name, sv.version AS version, sv.traits AS sv, re.traits AS re ' +
            'FROM source_versions sv JOIN registry_entries re ON re.entry_id = sv.id',
        )
        .all()
      check.close()
      assert.equal(rows.length, ODD.length)
      for (const r of rows) {
        const doc = ODD.find((d) => d.name === r.name && d.version === r.version)
        assert.ok(doc, `${String(r.name)}@${String(r.version)}`)
        assert.equal(Number(r.sv), traitsOf(doc), `${String(r.name)}`)
        assert.equal(Number(r.re), traitsOf(doc), `${String(r.name)} (registry_entries)`)
      }
    } finally {
      rmSync(dir, {recursive: true, force: true})
    }
  })

  test('PostgreSQL: the same', {skip: postgresMissing}, async () => {
    const url = await pgDatabase()
    const store = new PostgresRegistryStore({connection: {url}, pollMs: 200})
    await store.init()
    await store.setRegistries([{name: 'default', sources: ['a']}])
    await store.replaceSource('a', ODD, T0)
    await store.close()
    const cluster = await pgCluster()
    const db = new URL(url).pathname.slice(1)
    await cluster.psql(
      'ALTER TABLE source_versions DROP COLUMN traits; ALTER TABLE registry_entries DROP COLUMN traits; ' +
        'DELETE FROM schema_migrations WHERE version = 3',
      db,
    )
    const upgraded = new PostgresRegistryStore({connection: {url}, pollMs: 200})
    await upgraded.init()
    await upgraded.close()
    const out = await cluster.psql(
      "SELECT sv.name || '=' || sv.version || '=' || sv.traits || '=' || re.traits " +
        'FROM source_versions sv JOIN registry_entries re ON re.entry_id = sv.id',
      db,
    )
    const lines = out
      .trim()
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l.includes('='))
    assert.equal(lines.length, ODD.length, out)
    for (const line of lines) {
      const [name, version, sv, re] = line.split('=')
      const doc = ODD.find((d) => d.name === name && d.version === version)!
      assert.equal(Number(sv), traitsOf(doc), name)
      assert.equal(Number(re), traitsOf(doc), `${name} (registry_entries)`)
    }
  })
})
