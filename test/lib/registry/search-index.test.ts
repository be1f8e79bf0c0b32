/**
 * The trigram search index (sqlite/search.ts) gives exactly what a scan with
 * `instr(search_text, lower(term))` gives: a property test over random data and random terms
 * (case, Unicode, quotes and FTS5 syntax characters), through every plan (short terms, rare terms
 * read through the index, frequent terms scanned), across syncs that add, change and remove
 * versions, on registries fed by overlapping sources.
 */
import {test, describe, before, after, it} from 'node:test'
import assert from 'node:assert/strict'
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {DatabaseSync} from 'node:sqlite'
import {SqliteRegistryStore} from '../../../src/lib/registry/sqlite-store.ts'
import {allOf, INDEX_CANDIDATES, tiling} from '../../../src/lib/registry/sqlite/search.ts'
import type {ListQuery, ServerJson} from '../../../src/lib/registry/types.ts'

const SEED = Number(process.env.SEARCH_SEED ?? 20261125)
const T0 = new Date('2025-01-01T00:00:00.000Z')
const T1 = new Date('2025-02-01T00:00:00.000Z')

/** mulberry32: a small seeded generator, so a failure names a seed that reproduces it. */
function generator(seed: number) {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (n: number) => Math.floor(next() * n)
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T
  return {next, int, pick}
}

// Pieces that stress case folding (ß, İ, Σ/ς, the Kelvin sign, ligatures), combining marks,
// astral characters, and characters that mean something to FTS5 or LIKE.
const PIECES = [
  'thing',
  'Thing',
  'THING',
  'tool',
  'weather',
  'a',
  'b',
  'ab',
  'ba',
  '12',
  '34',
  '1234',
  'ß',
  'SS',
  'İ',
  'i̇',
  'Σ',
  'σ',
  'ς',
  'K',
  'k',
  'ﬁ',
  'é',
  'é',
  '😀',
  '中文',
  'Ω',
  '"',
  "'",
  '*',
  '%',
  '_',
  ' ',
  '-',
  ':',
  '^',
  '(',
  ')',
  'NEAR',
  'AND',
  'OR',
  'NOT',
  '\t',
] as const

function text(r: ReturnType<typeof generator>, pieces: number): string {
  let s = ''
  for (let i = 0; i < pieces; i++) s += r.pick(PIECES)
  return s
}

/** Versions of one source: every description holds "server", so that term is frequent. */
function sourceData(r: ReturnType<typeof generator>, source: string, count: number): ServerJson[] {
  const servers: ServerJson[] = []
  for (let i = 0; i < count; i++) {
    const n = r.int(count / 3)
    servers.push({
      name: `io.t${n % 7}/srv-${n}`,
      version: `1.0.${i % 3}`,
      title: r.next() < 0.5 ? text(r, 1 + r.int(3)) : undefined,
      description: `${source} server ${text(r, 1 + r.int(6))}`,
    })
  }
  return servers
}

/** Random terms: substrings of stored text with random case, and random piece strings. */
function terms(r: ReturnType<typeof generator>, data: ServerJson[], count: number): string[] {
  const out = ['server', 'SERVER', 'thing', 'ss', 'ß', '😀', '"', '""', 'a"b', 'near', 'x']
  while (out.length < count) {
    if (r.next() < 0.6) {
      const s = r.pick(data)
      const chars = [...`${s.name}\n${s.title ?? ''}\n${s.description ?? ''}`]
      const start = r.int(chars.length)
      const term = chars.slice(start, start + 1 + r.int(8)).join('')
      out.push(r.next() < 0.3 ? term.toUpperCase() : term)
    } else out.push(text(r, 1 + r.int(3)))
  }
  return out.filter((t) => t.length > 0)
}

describe('search through the trigram index equals the instr scan', () => {
  let dir: string
  let path: string
  let store: SqliteRegistryStore
  let reference: DatabaseSync
  const r = generator(SEED)

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolgate-search-'))
    path = join(dir, 'registry.db')
    store = new SqliteRegistryStore({path})
    await store.init()
    await store.setRegistries([
      {name: 'default', sources: ['a', 'b']},
      {name: 'reversed', sources: ['b', 'a']},
    ])
    reference = new DatabaseSync(path, {readOnly: true})
  })
  after(async () => {
    reference.close()
    await store.close()
    await rm(dir, {recursive: true, force: true})
  })

  /** Today's semantics: every row whose search text holds the lower-cased term, in page order. */
  function expected(registry: string, term: string, latest: boolean): string[] {
    return reference
      .prepare(
        'SELECT name, version FROM registry_entries WHERE registry = ? AND instr(search_text, ?) > 0 ' +
          (latest ? 'AND is_latest = 1 ' : '') +
          'ORDER BY name, version',
      )
      .all(registry, term.toLowerCase())
      .map((row) => `${String(row.name)}@${String(row.version)}`)
  }

  /** How many stored versions (any source) the index offers for a term: what picks the plan. */
  function candidates(term: string): number {
    const row = reference
      .prepare('SELECT count(*) AS n FROM search_index WHERE search_index MATCH ?')
      .get(allOf(tiling(term.toLowerCase())))
    return Number(row?.n)
  }

  async function searched(registry: string, query: ListQuery): Promise<string[]> {
    const seen: string[] = []
    let cursor: string | undefined
    do {
      const page = await store.listServers(registry, {...query, cursor})
      seen.push(...page.servers.map((e) => `${e.server.name}@${e.server.version}`))
      cursor = page.nextCursor
    } while (cursor)
    return seen
  }

  async function compareAll(data: ServerJson[], count: number) {
    const plans = {short: 0, rare: 0, frequent: 0}
    for (const term of terms(r, data, count)) {
      const registry = r.pick(['default', 'reversed'])
      const latest = r.next() < 0.25
      const want = expected(registry, term, latest)
      const got = await searched(registry, {
        search: term,
        limit: r.pick([3, 30, 100]),
        ...(latest ? {version: 'latest'} : {}),
      })
      assert.deepEqual(
        got,
        want,
        `seed ${SEED}, registry ${registry}, term ${JSON.stringify(term)}`,
      )
      if (tiling(term.toLowerCase()).length === 0) plans.short++
      else if (candidates(term) <= INDEX_CANDIDATES) plans.rare++
      else plans.frequent++
    }
    return plans
  }

  test('on random data and terms, through every plan, and again after a sync changed it', async () => {
    const a = sourceData(r, 'a', 1500)
    const b = sourceData(r, 'b', 900)
    await store.replaceSource('a', a, T0)
    await store.replaceSource('b', b, T0)
    const first = await compareAll([...a, ...b], 400)
    // Every plan was exercised (the frequent one by "server", present in every description).
    assert.ok(first.short > 0 && first.rare > 0 && first.frequent > 0, JSON.stringify(first))

    // A second sync: a third of the versions removed, some descriptions changed, new ones added.
    const a2 = a
      .filter((_, i) => i % 3 !== 0)
      .map((s, i) => (i % 4 === 0 ? {...s, description: `a server changed ${text(r, 3)}`} : s))
      .concat(sourceData(r, 'a', 150).map((s) => ({...s, name: `${s.name}-new`})))
    await store.replaceSource('a', a2, T1)
    await compareAll([...a2, ...b, ...a], 300)
  })

  test('a rare term is read through the index, a short one is not', () => {
    const rare = store.explainList('default', {limit: 30, search: 'srv-1'}).join('\n')
    assert.match(rare, /SCAN hit VIRTUAL TABLE INDEX/, rare)
    const short = store.explainList('default', {limit: 30, search: 'sr'}).join('\n')
    assert.doesNotMatch(short, /VIRTUAL TABLE/, short)
    assert.match(short, /SEARCH re USING PRIMARY KEY/, short)
  })
})

describe('the search index on a database from before it existed', () => {
  it('is built from the stored versions when migration 2 runs', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolgate-search-upgrade-'))
    const path = join(dir, 'registry.db')
    try {
      const servers: ServerJson[] = Array.from({length: 50}, (_, i) => ({
        name: `io.up/srv-${i}`,
        version: '1.0.0',
        description: `upgrade server number ${i}`,
      }))
      const first = new SqliteRegistryStore({path})
      await first.init()
      await first.setRegistries([{name: 'default', sources: ['a']}])
      await first.replaceSource('a', servers, T0)
      await first.close()
      // Back to schema 1, as a database written before this index existed.
      const db = new DatabaseSync(path)
      db.exec(
        'DROP TRIGGER source_versions_search_insert; DROP TRIGGER source_versions_search_delete; ' +
          'DROP TRIGGER source_versions_search_update; DROP TABLE search_index; ' +
          'DELETE FROM schema_migrations WHERE version = 2',
      )
      db.close()

      const upgraded = new SqliteRegistryStore({path})
      await upgraded.init()
      try {
        assert.deepEqual(upgraded.schemaVersions(), [1, 2, 3, 4])
        const plan = upgraded.explainList('default', {limit: 30, search: 'number 42'}).join('\n')
        assert.match(plan, /SCAN hit VIRTUAL TABLE INDEX/, plan)
        const page = await upgraded.listServers('default', {limit: 30, search: 'number 42'})
        assert.deepEqual(
          page.servers.map((e) => e.server.name),
          ['io.up/srv-42'],
        )
      } finally {
        await upgraded.close()
      }
    } finally {
      await rm(dir, {recursive: true, force: true})
    }
  })
})
