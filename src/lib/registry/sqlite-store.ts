import {mkdirSync} from 'node:fs'
import {dirname} from 'node:path'
import type {DatabaseSync, StatementSync} from 'node:sqlite'
import {ToolgateError} from '../errors.ts'
import {decodeCursor, encodeCursor} from './cursor.ts'
import {pickLatest} from './latest.ts'
import {MIGRATIONS, type Migration} from './migrations.ts'
import {checkRecord, prepareRecord} from './record.ts'
import {loadSqlite} from './sqlite-module.ts'
import {
  OFFICIAL_META_KEY,
  type ListQuery,
  type ListResult,
  type OfficialMeta,
  type RegistryDefinition,
  type RegistryStore,
  type ReplaceSourceOptions,
  type ServerEntry,
  type ServerJson,
  type SyncStats,
} from './types.ts'

/**
 * `RegistryStore` on Node's built-in SQLite (contract §1 "Storage"). One file, WAL mode, versioned
 * migrations. Writes (`replaceSource`, `setRegistries`) materialise each registry's effective rows
 * into `registry_entries`, so reads are index range scans: a page is `WHERE (name, version) > cursor
 * ORDER BY name, version LIMIT n+1`, costing the same at any depth (no OFFSET).
 */
export interface SqliteStoreOptions {
  /** Database file, or `:memory:`. Its directory is created 0700 when missing. */
  path: string
  /** How long a writer waits for another connection's lock before failing. */
  busyTimeoutMs?: number
}

// Above this many changed names a full rebuild of a registry is cheaper than per-name updates.
const FULL_REBUILD_THRESHOLD = 2000

interface EntryRow {
  name: string
  version: string
  server_json: string
  status: string
  published_at: string
  updated_at: string
  is_latest: number
}

const ENTRY_COLUMNS =
  'sv.name AS name, sv.version AS version, sv.server_json AS server_json, sv.status AS status, ' +
  'sv.published_at AS published_at, sv.updated_at AS updated_at, sv.is_latest AS is_latest'

// The entry `{"server":…,"_meta":{official}}` as JSON text, assembled by SQLite. Byte-identical to
// JSON.stringify(toEntry(row)): server_json was itself written by JSON.stringify (prepareRecord),
// which a parse/stringify round trip reproduces exactly, and the official values are plain ASCII
// (a status keyword, ISO 8601 instants), for which json_quote and JSON.stringify agree.
const ENTRY_TEXT_COLUMNS =
  `'{"server":' || sv.server_json || ',"_meta":{${JSON.stringify(OFFICIAL_META_KEY)}:{"status":' || ` +
  `json_quote(sv.status) || ',"publishedAt":' || json_quote(sv.published_at) || ` +
  `',"updatedAt":' || json_quote(sv.updated_at) || ',"isLatest":' || ` +
  `CASE WHEN sv.is_latest = 1 THEN 'true' ELSE 'false' END || '}}}' AS entry`

export class SqliteRegistryStore implements RegistryStore {
  readonly path: string
  #busyTimeoutMs: number
  #db: DatabaseSync | undefined
  #statements = new Map<string, StatementSync>()
  #registries = new Map<string, string[]>()
  // Committed write transactions on this connection (part of dataVersion()).
  #writes = 0

  constructor(options: SqliteStoreOptions) {
    this.path = options.path
    this.#busyTimeoutMs = options.busyTimeoutMs ?? 5000
  }

  async init(): Promise<void> {
    if (this.#db) return
    const {DatabaseSync} = await loadSqlite()
    if (this.path !== ':memory:') {
      try {
        mkdirSync(dirname(this.path), {recursive: true, mode: 0o700})
      } catch (err) {
        throw new ToolgateError(
          'ERR_STORAGE',
          `storage: cannot create the directory of ${this.path}`,
          {
            cause: err,
          },
        )
      }
    }
    let db: DatabaseSync
    try {
      db = new DatabaseSync(this.path)
      db.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(this.#busyTimeoutMs))}`)
      // WAL: readers never block the syncer's write transaction and vice versa.
      db.exec('PRAGMA journal_mode = WAL')
      db.exec('PRAGMA synchronous = NORMAL')
      runMigrations(db, MIGRATIONS)
      // Per-connection scratch space for replaceSource (not part of the persistent schema).
      db.exec(
        'CREATE TEMP TABLE IF NOT EXISTS staging (name TEXT NOT NULL, version TEXT NOT NULL, ' +
          'server_json TEXT NOT NULL, content_hash TEXT NOT NULL, search_text TEXT NOT NULL, ' +
          'up_status TEXT, up_published TEXT, up_updated TEXT, up_updated_ms INTEGER, up_latest INTEGER, ' +
          'PRIMARY KEY (name, version))',
      )
    } catch (err) {
      throw new ToolgateError(
        'ERR_STORAGE',
        `storage: cannot open ${this.path}: ${messageOf(err)}`,
        {
          cause: err,
        },
      )
    }
    this.#db = db
    this.#loadRegistries()
  }

  async close(): Promise<void> {
    this.#statements.clear()
    this.#db?.close()
    this.#db = undefined
  }

  async ping(): Promise<void> {
    this.#stmt('ping', 'SELECT 1 AS ok').get()
  }

  /** Applied schema versions, oldest first (for tests and diagnostics). */
  schemaVersions(): number[] {
    return this.#stmt('schema_versions', 'SELECT version FROM schema_migrations ORDER BY version')
      .all()
      .map((r) => Number(r.version))
  }

  async setRegistries(registries: RegistryDefinition[]): Promise<void> {
    const wanted = new Map<string, string[]>()
    for (const r of registries) {
      if (wanted.has(r.name)) {
        throw new ToolgateError('ERR_CONFIG_INVALID', `registries: "${r.name}" is defined twice`)
      }
      wanted.set(r.name, [...r.sources])
    }
    this.#transaction(() => {
      for (const name of this.#registries.keys()) {
        if (wanted.has(name)) continue
        this.#stmt('reg_del', 'DELETE FROM registries WHERE name = ?').run(name)
        this.#stmt('reg_src_del', 'DELETE FROM registry_sources WHERE registry = ?').run(name)
        this.#stmt('reg_entries_del', 'DELETE FROM registry_entries WHERE registry = ?').run(name)
      }
      for (const [name, sources] of wanted) {
        const current = this.#registries.get(name)
        if (current && sameList(current, sources)) continue
        this.#stmt('reg_ins', 'INSERT OR IGNORE INTO registries (name) VALUES (?)').run(name)
        this.#stmt('reg_src_del', 'DELETE FROM registry_sources WHERE registry = ?').run(name)
        const ins = this.#stmt(
          'reg_src_ins',
          'INSERT INTO registry_sources (registry, position, source) VALUES (?, ?, ?)',
        )
        sources.forEach((s, i) => ins.run(name, i, s))
        this.#rebuildRegistry(name)
      }
    })
    this.#registries = wanted
  }

  hasRegistry(name: string): boolean {
    return this.#registries.has(name)
  }

  async replaceSource(
    source: string,
    servers: Iterable<ServerJson>,
    now: Date,
    options: ReplaceSourceOptions = {},
  ): Promise<SyncStats> {
    const nowIso = now.toISOString()
    const nowMs = now.getTime()
    const trust = options.trustOfficialMeta === true
    const stats: SyncStats = {source, versions: 0, added: 0, updated: 0, removed: 0, skipped: 0}
    // Names whose versions changed, until there are so many that whole-source recomputation is
    // cheaper (`bulk`): then the set is dropped, so a first load of 100,000 versions holds no list.
    const changedNames = new Set<string>()
    let bulk = false
    const changed = (name: unknown) => {
      if (bulk) return
      changedNames.add(String(name))
      if (changedNames.size > FULL_REBUILD_THRESHOLD) {
        bulk = true
        changedNames.clear()
      }
    }
    let skipped = 0

    // The incoming records go to a per-connection staging table one at a time, then the diff
    // against what the source held is done in SQL: memory stays flat whatever the source's size.
    this.#transaction(() => {
      this.#stmt('stg_clear', 'DELETE FROM temp.staging').run()
      const stage = this.#stmt(
        'stg_ins',
        'INSERT OR IGNORE INTO temp.staging (name, version, server_json, content_hash, search_text, ' +
          'up_status, up_published, up_updated, up_updated_ms, up_latest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      )
      for (const server of servers) {
        if (checkRecord(server) !== undefined) {
          skipped++
          continue
        }
        const rec = prepareRecord(server, trust)
        const up = rec.official
        const r = stage.run(
          rec.name,
          rec.version,
          rec.json,
          rec.hash,
          rec.searchText,
          up?.status ?? null,
          up?.publishedAt ?? null,
          up?.updatedAt ?? null,
          up?.updatedAt ? Date.parse(up.updatedAt) : null,
          up?.isLatest === undefined ? null : up.isLatest ? 1 : 0,
        )
        // First occurrence wins; a source listing one version twice is a data error upstream.
        if (r.changes === 0) skipped++
        else stats.versions++
      }

      for (const row of this.#stmt(
        'diff_removed',
        'SELECT id, name FROM source_versions sv WHERE sv.source = ? AND NOT EXISTS ' +
          '(SELECT 1 FROM temp.staging s WHERE s.name = sv.name AND s.version = sv.version)',
      ).all(source)) {
        this.#stmt('sv_del', 'DELETE FROM source_versions WHERE id = ?').run(Number(row.id))
        stats.removed++
        changed(row.name)
      }

      // Changed versions: new content, or different upstream-owned metadata.
      for (const row of this.#stmt(
        'diff_updated',
        'SELECT sv.name AS name, (sv.content_hash <> s.content_hash OR ' +
          "sv.status <> COALESCE(s.up_status, 'active')) AS counted " +
          'FROM temp.staging s JOIN source_versions sv ' +
          'ON sv.source = ? AND sv.name = s.name AND sv.version = s.version ' +
          "WHERE sv.content_hash <> s.content_hash OR sv.status <> COALESCE(s.up_status, 'active') " +
          'OR (s.up_published IS NOT NULL AND s.up_published <> sv.published_at) ' +
          'OR (s.up_updated IS NOT NULL AND s.up_updated <> sv.updated_at)',
      ).iterate(source)) {
        if (Number(row.counted) === 1) stats.updated++
        changed(row.name)
      }
      // publishedAt carries over; updatedAt moves only when the document changed (or upstream says).
      this.#stmt(
        'sv_upd',
        'UPDATE source_versions AS sv SET server_json = s.server_json, content_hash = s.content_hash, ' +
          "status = COALESCE(s.up_status, 'active'), " +
          'published_at = COALESCE(s.up_published, sv.published_at), ' +
          'updated_at = COALESCE(s.up_updated, CASE WHEN sv.content_hash <> s.content_hash THEN ? ELSE sv.updated_at END), ' +
          'updated_ms = COALESCE(s.up_updated_ms, CASE WHEN sv.content_hash <> s.content_hash THEN ? ELSE sv.updated_ms END), ' +
          'search_text = s.search_text ' +
          'FROM temp.staging s WHERE sv.source = ? AND sv.name = s.name AND sv.version = s.version AND (' +
          "sv.content_hash <> s.content_hash OR sv.status <> COALESCE(s.up_status, 'active') " +
          'OR (s.up_published IS NOT NULL AND s.up_published <> sv.published_at) ' +
          'OR (s.up_updated IS NOT NULL AND s.up_updated <> sv.updated_at))',
      ).run(nowIso, nowMs, source)

      for (const row of this.#stmt(
        'diff_added',
        'SELECT s.name AS name FROM temp.staging s WHERE NOT EXISTS (SELECT 1 FROM source_versions sv ' +
          'WHERE sv.source = ? AND sv.name = s.name AND sv.version = s.version)',
      ).iterate(source)) {
        stats.added++
        changed(row.name)
      }
      this.#stmt(
        'sv_add',
        'INSERT INTO source_versions (source, name, version, server_json, content_hash, status, ' +
          'published_at, updated_at, updated_ms, is_latest, search_text) ' +
          "SELECT ?, s.name, s.version, s.server_json, s.content_hash, COALESCE(s.up_status, 'active'), " +
          'COALESCE(s.up_published, ?), COALESCE(s.up_updated, ?), COALESCE(s.up_updated_ms, ?), 0, s.search_text ' +
          'FROM temp.staging s WHERE NOT EXISTS (SELECT 1 FROM source_versions sv ' +
          'WHERE sv.source = ? AND sv.name = s.name AND sv.version = s.version)',
      ).run(source, nowIso, nowIso, nowMs, source)

      this.#updateLatest(source, changedNames, bulk)
      this.#stmt('stg_clear', 'DELETE FROM temp.staging').run()

      if (!bulk && changedNames.size === 0) return
      for (const [registry, sources] of this.#registries) {
        if (!sources.includes(source)) continue
        if (bulk) this.#rebuildRegistry(registry)
        else for (const name of changedNames) this.#rebuildName(registry, name)
      }
    })
    stats.skipped = skipped
    return stats
  }

  async retainSources(sources: string[]): Promise<void> {
    const keep = new Set(sources)
    const present = this.#stmt('src_names', 'SELECT DISTINCT source FROM source_versions')
      .all()
      .map((r) => String(r.source))
    const drop = present.filter((s) => !keep.has(s))
    if (drop.length === 0) return
    this.#transaction(() => {
      for (const s of drop) {
        this.#stmt('src_drop', 'DELETE FROM source_versions WHERE source = ?').run(s)
      }
      for (const [registry, list] of this.#registries) {
        if (list.some((s) => drop.includes(s))) this.#rebuildRegistry(registry)
      }
    })
  }

  async listServers(registry: string, query: ListQuery): Promise<ListResult> {
    const page = this.#page(registry, query, 'list', ENTRY_COLUMNS)
    const rows = page.rows as unknown as EntryRow[]
    const result: ListResult = {servers: rows.map(toEntry)}
    if (page.next) result.nextCursor = page.next
    return result
  }

  /**
   * `listServers` with each entry as its JSON text, assembled by SQLite (no JSON parse or
   * stringify per request). Byte-identical to `JSON.stringify` of the object path's entries.
   */
  async listServersText(
    registry: string,
    query: ListQuery,
  ): Promise<{servers: string[]; nextCursor?: string}> {
    const page = this.#page(registry, query, 'list_text', ENTRY_TEXT_COLUMNS)
    const result: {servers: string[]; nextCursor?: string} = {
      servers: page.rows.map((r) => r.entry as string),
    }
    if (page.next) result.nextCursor = page.next
    return result
  }

  async listVersions(registry: string, name: string): Promise<ServerEntry[] | undefined> {
    const rows = this.#versionRows(registry, name, 'versions', ENTRY_COLUMNS)
    return rows.length === 0 ? undefined : (rows as unknown as EntryRow[]).map(toEntry)
  }

  /** `listVersions` with each entry as its JSON text (as `listServersText`). */
  async listVersionsText(registry: string, name: string): Promise<string[] | undefined> {
    const rows = this.#versionRows(registry, name, 'versions_text', ENTRY_TEXT_COLUMNS)
    return rows.length === 0 ? undefined : rows.map((r) => r.entry as string)
  }

  async getVersion(
    registry: string,
    name: string,
    version: string,
  ): Promise<ServerEntry | undefined> {
    const row = this.#versionRow(registry, name, version, 'get', ENTRY_COLUMNS)
    return row ? toEntry(row as unknown as EntryRow) : undefined
  }

  /** `getVersion` as the JSON text of the single-version body (as `listServersText`). */
  async getVersionText(
    registry: string,
    name: string,
    version: string,
  ): Promise<string | undefined> {
    const row = this.#versionRow(registry, name, version, 'get_text', ENTRY_TEXT_COLUMNS)
    return row ? (row.entry as string) : undefined
  }

  /**
   * Changes whenever the data a read can return may have changed: every write through this store,
   * and every commit by another connection to the same file (SQLite's `PRAGMA data_version`), so a
   * response cache keyed on it is never stale, even with several processes sharing the file.
   */
  dataVersion(): number {
    const row = this.#stmt('data_version', 'PRAGMA data_version').get()
    return this.#writes + Number(row?.data_version ?? 0)
  }

  async countVersions(): Promise<number> {
    const row = this.#stmt('count', 'SELECT COUNT(*) AS n FROM source_versions').get()
    return Number(row?.n ?? 0)
  }

  /** Number of effective versions a registry serves (for metrics and tests). */
  countRegistryVersions(registry: string): number {
    const row = this.#stmt(
      'count_reg',
      'SELECT COUNT(*) AS n FROM registry_entries WHERE registry = ?',
    ).get(registry)
    return Number(row?.n ?? 0)
  }

  /** The query plan of a list query shape, for tests that guard against full scans. */
  explainList(registry: string, query: ListQuery): string[] {
    const sql =
      'EXPLAIN QUERY PLAN SELECT re.name FROM registry_entries re JOIN source_versions sv ON sv.id = re.entry_id ' +
      'WHERE re.registry = ? AND re.name >= ? AND (re.name > ? OR re.version > ?)' +
      (query.version === 'latest' ? ' AND re.is_latest = 1' : '') +
      ' ORDER BY re.name, re.version LIMIT ?'
    return this.#database()
      .prepare(sql)
      .all(registry, 'a/a', 'a/a', '', query.limit)
      .map((r) => String(r.detail))
  }

  // ----- internals -----

  #database(): DatabaseSync {
    if (!this.#db) throw new ToolgateError('ERR_STORAGE', 'storage: the store is not open')
    return this.#db
  }

  #stmt(name: string, sql: string): StatementSync {
    let s = this.#statements.get(name)
    if (!s) {
      s = this.#database().prepare(sql)
      this.#statements.set(name, s)
    }
    return s
  }

  #transaction(fn: () => void): void {
    const db = this.#database()
    db.exec('BEGIN IMMEDIATE')
    try {
      fn()
      db.exec('COMMIT')
      this.#writes++
    } catch (err) {
      db.exec('ROLLBACK')
      throw err
    }
  }

  // One page of registry_entries in (name, version) order, the columns given, and the cursor of the
  // next page when there is one. Statements are prepared once per query shape.
  #page(
    registry: string,
    query: ListQuery,
    kind: string,
    columns: string,
  ): {rows: Record<string, unknown>[]; next: string | undefined} {
    this.#requireRegistry(registry)
    const after = query.cursor !== undefined ? decodeCursor(query.cursor) : undefined
    const latest = query.version === 'latest'
    const exactVersion = query.version !== undefined && !latest ? query.version : undefined
    const search = query.search ? query.search.toLowerCase() : undefined
    const updatedSince = query.updatedSince?.getTime()
    if (updatedSince !== undefined && Number.isNaN(updatedSince)) {
      throw new ToolgateError('ERR_BAD_PARAMETER', 'updated_since: not a valid date-time')
    }
    const limit = Math.max(1, Math.min(100, Math.floor(query.limit)))

    const where = ['re.registry = ?']
    const params: (string | number)[] = [registry]
    let shape = ''
    if (after) {
      // Keyset: (name, version) > (after.name, after.version). `name >= ?` bounds the range scan;
      // the OR only filters the versions of the cursor's own name.
      where.push('re.name >= ?', '(re.name > ? OR re.version > ?)')
      params.push(after.name, after.name, after.version)
      shape += 'c'
    }
    if (latest) {
      where.push('re.is_latest = 1')
      shape += 'l'
    } else if (exactVersion !== undefined) {
      where.push('re.version = ?')
      params.push(exactVersion)
      shape += 'v'
    }
    if (updatedSince !== undefined) {
      where.push('re.updated_ms > ?')
      params.push(updatedSince)
      shape += 'u'
    }
    if (search) {
      // instr() rather than LIKE: no wildcard escaping, and user text is never a pattern.
      where.push('instr(re.search_text, ?) > 0')
      params.push(search)
      shape += 's'
    }
    params.push(limit + 1)
    const stmt = this.#stmt(
      `${kind}_${shape}`,
      `SELECT re.name AS page_name, re.version AS page_version, ${columns} ` +
        'FROM registry_entries re JOIN source_versions sv ON sv.id = re.entry_id ' +
        `WHERE ${where.join(' AND ')} ORDER BY re.name, re.version LIMIT ?`,
    )
    const rows = stmt.all(...params)
    const more = rows.length > limit
    if (more) rows.length = limit
    const last = rows[rows.length - 1]
    const next =
      more && last
        ? encodeCursor({name: String(last.page_name), version: String(last.page_version)})
        : undefined
    return {rows, next}
  }

  #versionRows(
    registry: string,
    name: string,
    kind: string,
    columns: string,
  ): Record<string, unknown>[] {
    this.#requireRegistry(registry)
    return this.#stmt(
      kind,
      `SELECT ${columns} FROM registry_entries re JOIN source_versions sv ON sv.id = re.entry_id ` +
        'WHERE re.registry = ? AND re.name = ? ORDER BY re.version',
    ).all(registry, name)
  }

  #versionRow(
    registry: string,
    name: string,
    version: string,
    kind: string,
    columns: string,
  ): Record<string, unknown> | undefined {
    this.#requireRegistry(registry)
    const from = `SELECT ${columns} FROM registry_entries re JOIN source_versions sv ON sv.id = re.entry_id `
    return version === 'latest'
      ? this.#stmt(
          `${kind}_latest`,
          from + 'WHERE re.registry = ? AND re.name = ? AND re.is_latest = 1 LIMIT 1',
        ).get(registry, name)
      : this.#stmt(
          `${kind}_version`,
          from + 'WHERE re.registry = ? AND re.name = ? AND re.version = ?',
        ).get(registry, name, version)
  }

  #requireRegistry(registry: string): void {
    if (!this.#registries.has(registry)) {
      throw new ToolgateError('ERR_REGISTRY_NOT_FOUND', 'registry not found')
    }
  }

  #loadRegistries(): void {
    const map = new Map<string, string[]>()
    for (const r of this.#stmt('reg_all', 'SELECT name FROM registries ORDER BY name').all()) {
      map.set(String(r.name), [])
    }
    const rows = this.#stmt(
      'reg_src_all',
      'SELECT registry, source FROM registry_sources ORDER BY registry, position',
    ).all()
    for (const r of rows) map.get(String(r.registry))?.push(String(r.source))
    this.#registries = map
  }

  // isLatest per name of one source, recomputed only for names whose versions changed.
  #updateLatest(source: string, names: Set<string>, bulk: boolean): void {
    if (!bulk && names.size === 0) return
    const flips: Array<[number, number]> = []
    const decide = (group: LatestRow[]) => {
      const best = chooseLatest(group)
      for (const v of group) {
        const want = v === best ? 1 : 0
        if (v.is_latest !== want) flips.push([v.id, want])
      }
    }
    const select =
      'SELECT sv.id AS id, sv.name AS name, sv.version AS version, sv.published_at AS published_at, ' +
      'sv.is_latest AS is_latest, s.up_latest AS up_latest FROM source_versions sv ' +
      'LEFT JOIN temp.staging s ON s.name = sv.name AND s.version = sv.version WHERE sv.source = ?'
    if (bulk) {
      // Walk the whole source in name order, one name's versions in memory at a time.
      let group: LatestRow[] = []
      const all = this.#stmt('latest_all', `${select} ORDER BY sv.name`).iterate(source)
      for (const r of all as Iterable<LatestRow>) {
        if (group.length > 0 && group[0]?.name !== r.name) {
          decide(group)
          group = []
        }
        group.push(r)
      }
      if (group.length > 0) decide(group)
    } else {
      const one = this.#stmt('latest_name', `${select} AND sv.name = ?`)
      for (const name of names) {
        const group = one.all(source, name) as unknown as LatestRow[]
        if (group.length > 0) decide(group)
      }
    }
    const set = this.#stmt('latest_set', 'UPDATE source_versions SET is_latest = ? WHERE id = ?')
    for (const [id, want] of flips) set.run(want, id)
  }

  // Precedence (contract §1): a name present in several sources of a registry is served, with all
  // its versions, from the source listed first.
  #rebuildRegistry(registry: string): void {
    this.#stmt('re_del_all', 'DELETE FROM registry_entries WHERE registry = ?').run(registry)
    this.#stmt(
      're_ins_all',
      'INSERT INTO registry_entries (registry, name, version, entry_id, updated_ms, is_latest, search_text) ' +
        'SELECT registry, name, version, id, updated_ms, is_latest, search_text FROM (' +
        '  SELECT rs.registry AS registry, sv.name AS name, sv.version AS version, sv.id AS id, ' +
        '    sv.updated_ms AS updated_ms, sv.is_latest AS is_latest, sv.search_text AS search_text, ' +
        '    rs.position AS position, MIN(rs.position) OVER (PARTITION BY sv.name) AS best ' +
        '  FROM source_versions sv JOIN registry_sources rs ON rs.source = sv.source ' +
        '  WHERE rs.registry = ?' +
        ') WHERE position = best',
    ).run(registry)
  }

  #rebuildName(registry: string, name: string): void {
    this.#stmt('re_del_name', 'DELETE FROM registry_entries WHERE registry = ? AND name = ?').run(
      registry,
      name,
    )
    this.#stmt(
      're_ins_name',
      'INSERT INTO registry_entries (registry, name, version, entry_id, updated_ms, is_latest, search_text) ' +
        'SELECT rs.registry, sv.name, sv.version, sv.id, sv.updated_ms, sv.is_latest, sv.search_text ' +
        'FROM source_versions sv JOIN registry_sources rs ON rs.source = sv.source ' +
        'WHERE rs.registry = ? AND sv.name = ? AND rs.position = (' +
        '  SELECT MIN(rs2.position) FROM source_versions sv2 ' +
        '  JOIN registry_sources rs2 ON rs2.source = sv2.source ' +
        '  WHERE rs2.registry = ? AND sv2.name = ?)',
    ).run(registry, name, registry, name)
  }
}

/** Applies pending migrations in order, each in its own transaction. Safe to run on every start. */
export function runMigrations(db: DatabaseSync, migrations: readonly Migration[]): number[] {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, ' +
      'description TEXT NOT NULL, applied_at TEXT NOT NULL)',
  )
  const applied = new Set(
    db
      .prepare('SELECT version FROM schema_migrations')
      .all()
      .map((r) => Number(r.version)),
  )
  const ran: number[] = []
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    if (applied.has(m.version)) continue
    db.exec('BEGIN IMMEDIATE')
    try {
      // Re-check inside the write lock: another process may have migrated meanwhile.
      const done = db
        .prepare('SELECT 1 AS x FROM schema_migrations WHERE version = ?')
        .get(m.version)
      if (!done) {
        db.exec(m.sql)
        db.prepare(
          'INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, ?)',
        ).run(m.version, m.description, new Date().toISOString())
        ran.push(m.version)
      }
      db.exec('COMMIT')
    } catch (err) {
      db.exec('ROLLBACK')
      throw err
    }
  }
  return ran
}

interface LatestRow {
  id: number
  name: string
  version: string
  published_at: string
  is_latest: number
  up_latest: number | null
}

function chooseLatest(group: LatestRow[]): LatestRow | undefined {
  // A trusted upstream that flags exactly one version of the name is believed; otherwise our rule.
  if (group.every((v) => v.up_latest !== null)) {
    const flagged = group.filter((v) => v.up_latest === 1)
    if (flagged.length === 1) return flagged[0]
  }
  return pickLatest(group.map((v) => ({version: v.version, publishedAt: v.published_at, v})))?.v
}

function toEntry(row: EntryRow): ServerEntry {
  return {
    server: JSON.parse(row.server_json) as ServerJson,
    _meta: {
      [OFFICIAL_META_KEY]: {
        status: row.status as OfficialMeta['status'],
        publishedAt: row.published_at,
        updatedAt: row.updated_at,
        isLatest: row.is_latest === 1,
      },
    },
  }
}

function sameList(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i])
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
