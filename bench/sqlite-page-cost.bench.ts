/**
 * What one uncached list page costs inside the SQLite store, in process (no HTTP), over the
 * 100,000-version registry of perf-table's deep-cursor row (issue 19): the mean over every page
 * cursor of a walk at limit=30, three rounds, for
 *
 *   positions only        the primary-key range scan a page starts with (no entry read): the floor
 *   + entry rows           the same joined to source_versions, reading server_json, counted inside
 *                          SQLite (no value reaches JavaScript): what SQLite itself must do
 *   entry columns to JS    the same rows, every entry column handed to JavaScript as strings
 *                          (node:sqlite, rows as arrays): the floor of any page served as JSON
 *   text by SQLite         the entry JSON assembled in SQL with `||` and json_quote (the store's
 *                          way before this bench), rows as objects
 *   store.listServersText  what serve calls now: rows as arrays, the entry text joined in JS
 *
 * It explains the deep-cursor row of perf-table: a page cannot cost less than "entry columns to
 * JS", whatever the store does around it.
 *
 *   node_modules/.bin/node bench/sqlite-page-cost.bench.ts
 */
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {DatabaseSync} from 'node:sqlite'
import {ENTRY_COLUMNS} from '../src/lib/registry/sqlite/entry-columns.ts'
import {SqliteRegistryStore} from '../src/lib/registry/sqlite-store.ts'
import {OFFICIAL_META_KEY} from '../src/lib/registry/types.ts'
import {startServe} from './helpers/serve-fixture.ts'
import {fmt, table} from './helpers/table.ts'

const VERSIONS = 100_000
const ROUNDS = 3
const work = mkdtempSync(join(tmpdir(), 'toolgate-page-cost-'))
const log = (msg: string) => process.stderr.write(`sqlite-page-cost: ${msg}\n`)

const KEYSET =
  "WHERE re.registry = 'default' AND re.name >= ? AND (re.name > ? OR re.version > ?) " +
  'ORDER BY re.name, re.version LIMIT 31'
const JOIN = 'FROM registry_entries re JOIN source_versions sv ON sv.id = re.entry_id '
const SQL_TEXT =
  `'{"server":' || sv.server_json || ',"_meta":{${JSON.stringify(OFFICIAL_META_KEY)}:{"status":' || ` +
  `json_quote(sv.status) || ',"publishedAt":' || json_quote(sv.published_at) || ` +
  `',"updatedAt":' || json_quote(sv.updated_at) || ',"isLatest":' || ` +
  `CASE WHEN sv.is_latest = 1 THEN 'true' ELSE 'false' END || '}}}' AS entry`

function meanMicros(
  cursors: {name: string; version: string}[],
  page: (c: {name: string; version: string}) => unknown,
): number {
  const t = process.hrtime.bigint()
  for (let r = 0; r < ROUNDS; r++) for (const c of cursors) page(c)
  return Number(process.hrtime.bigint() - t) / 1000 / (ROUNDS * cursors.length)
}

async function main(): Promise<void> {
  log(`generating and loading ${VERSIONS} versions`)
  const tg = await startServe(work, VERSIONS)
  await tg.stop()
  const path = join(work, `tg-${VERSIONS}`, 'registry.db')
  const db = new DatabaseSync(path, {readOnly: true})
  const positions = db
    .prepare(
      "SELECT name, version FROM registry_entries WHERE registry = 'default' ORDER BY name, version",
    )
    .all() as {name: string; version: string}[]
  const cursors = positions.filter((_, i) => i % 30 === 29)
  const store = new SqliteRegistryStore({path})
  await store.init()
  const {encodeCursor} = await import('../src/lib/registry/cursor.ts')
  const encoded = new Map(cursors.map((c) => [c, encodeCursor(c)]))

  const positionsOnly = db.prepare(
    `SELECT count(*) FROM (SELECT re.entry_id FROM registry_entries re ${KEYSET})`,
  )
  const entryRows = db.prepare(
    `SELECT count(*), sum(octet_length(j)) FROM (SELECT sv.server_json AS j ${JOIN}${KEYSET})`,
  )
  const sqlText = db.prepare(
    `SELECT re.name AS page_name, re.version AS page_version, ${SQL_TEXT} ${JOIN}${KEYSET}`,
  )
  const toJs = db.prepare(`SELECT re.name, re.version, ${ENTRY_COLUMNS} ${JOIN}${KEYSET}`)
  toJs.setReturnArrays(true)
  type Cursor = {name: string; version: string}
  const keyset = (c: Cursor) => [c.name, c.name, c.version] as const
  const steps: [string, (c: Cursor) => unknown][] = [
    ['positions only', (c) => positionsOnly.get(...keyset(c))],
    ['+ entry rows (inside SQLite)', (c) => entryRows.get(...keyset(c))],
    ['entry columns to JS (arrays)', (c) => toJs.all(...keyset(c))],
    ['text by SQLite (before)', (c) => sqlText.all(...keyset(c))],
    [
      'store.listServersText (now)',
      (c) => store.listServersText('default', {limit: 30, cursor: encoded.get(c)}),
    ],
  ]
  // Two passes, the first a warm-up, so every step reads a warm OS page cache.
  let rows: [string, number][] = []
  for (let pass = 0; pass < 2; pass++) {
    rows = steps.map(([name, page]) => [name, meanMicros(cursors, page)])
  }
  process.stdout.write(
    `\none uncached page of 30 entries, SQLite store, ${VERSIONS} versions, ${cursors.length} cursors x ${ROUNDS}\n` +
      table(
        ['step', 'mean µs/page'],
        rows.map(([name, us]) => [name, fmt(us)]),
      ) +
      '\n',
  )
  await store.close()
  db.close()
}

try {
  await main()
} finally {
  rmSync(work, {recursive: true, force: true})
}
