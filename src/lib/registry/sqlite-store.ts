import {mkdirSync} from 'node:fs'
import {dirname} from 'node:path'
import type {DatabaseSync, SQLInputValue, StatementSync} from 'node:sqlite'
import {ToolgateError} from '../errors.ts'
import {decodeCursor, encodeCursor} from './cursor.ts'
import {pickLatest} from './latest.ts'
import {MIGRATIONS, type Migration} from './migrations.ts'
import {checkRecord, prepareRecord} from './record.ts'
import {loadSqlite} from './sqlite-module.ts'
import {checkpointInWorker} from './wal-checkpoint.ts'
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
// Rows handled between two yields to the event loop during a sync (a few ms of work each).
const BATCH = 2000

// The columns of a diff_updated row that sv_upd writes, in its parameter order.
const UPDATED_COLUMNS = [
  'server_json',
  'content_hash',
  'status',
  'published_at',
  'updated_at',
  'updated_ms',
  'search_text',
  'id',
] as const

const tick = () => new Promise<void>((resolve) => setImmediate(resolve))

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
  // Readers' connection. Writes go through #wdb: a second connection to the same file (so a
  // sync's transaction can stay open across yields without readers seeing it), or #db itself for
  // `:memory:`, which cannot be shared.
  #db: DatabaseSync | undefined
  #wdb: DatabaseSync | undefined
  #statements = new Map<string, StatementSync>()
  #wstatements = new Map<string, StatementSync>()
  // Writes run one at a time (they share #wdb and its staging table); this is the queue's tail.
  #queue: Promise<unknown> = Promise.resolve()
  #checkpointing: Promise<unknown> | undefined
  #checkpointAgain = false
  #closing = false
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
    let wdb: DatabaseSync
    try {
      db = this.#open(DatabaseSync)
      // WAL: readers never block the syncer's write transaction and vice versa.
      db.exec('PRAGMA journal_mode = WAL')
      runMigrations(db, MIGRATIONS)
      wdb = this.path === ':memory:' ? db : this.#open(DatabaseSync)
      // Checkpoints happen off the main thread after each write (#checkpoint).
      if (wdb !== db) wdb.exec('PRAGMA wal_autocheckpoint = 0')
      // Per-connection scratch space for replaceSource (not part of the persistent schema).
      wdb.exec(
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
    this.#wdb = wdb
    this.#closing = false
    this.#loadRegistries()
  }

  #open(DatabaseSync: typeof import('node:sqlite').DatabaseSync): DatabaseSync {
    const db = new DatabaseSync(this.path)
    db.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(this.#busyTimeoutMs))}`)
    db.exec('PRAGMA synchronous = NORMAL')
    return db
  }

  /** Waits for the write in progress to stop at its next yield (rolled back), then closes. */
  async close(): Promise<void> {
    this.#closing = true
    await this.#queue
    await this.#checkpointing
    this.#statements.clear()
    this.#wstatements.clear()
    if (this.#wdb !== this.#db) this.#wdb?.close()
    this.#db?.close()
    this.#db = undefined
    this.#wdb = undefined
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
    return this.#exclusive(async () => this.#setRegistries(registries))
  }

  #setRegistries(registries: RegistryDefinition[]): void {
    const wanted = new Map<string, string[]>()
    for (const r of registries) {
      if (wanted.has(r.name)) {
        throw new ToolgateError('ERR_CONFIG_INVALID', `registries: "${r.name}" is defined twice`)
      }
      wanted.set(r.name, [...r.sources])
    }
    this.#syncTransaction(() => {
      for (const name of this.#registries.keys()) {
        if (wanted.has(name)) continue
        this.#wstmt('reg_del', 'DELETE FROM registries WHERE name = ?').run(name)
        this.#wstmt('reg_src_del', 'DELETE FROM registry_sources WHERE registry = ?').run(name)
        this.#wstmt('reg_entries_del', 'DELETE FROM registry_entries WHERE registry = ?').run(name)
      }
      for (const [name, sources] of wanted) {
        const current = this.#registries.get(name)
        if (current && sameList(current, sources)) continue
        this.#wstmt('reg_ins', 'INSERT OR IGNORE INTO registries (name) VALUES (?)').run(name)
        this.#wstmt('reg_src_del', 'DELETE FROM registry_sources WHERE registry = ?').run(name)
        const ins = this.#wstmt(
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
    return this.#exclusive(() => this.#replaceSource(source, servers, now, options))
  }

  // A sync is cooperative (the event loop keeps answering /health and reads during it):
  // 1. the incoming records are staged BATCH at a time into a per-connection temp table, yielding
  //    between batches; nothing visible to readers changes;
  // 2. the diff is applied in one write transaction, BATCH rows at a time. On a database file the
  //    writes go through a second connection, so the transaction stays open across yields while
  //    readers (their own connection, WAL) keep seeing the last committed data until the COMMIT:
  //    a reader sees the old set or the new one, never a mix. With `:memory:` (one connection,
  //    tests) step 2 cannot yield and runs in one go.
  async #replaceSource(
    source: string,
    servers: Iterable<ServerJson>,
    now: Date,
    options: ReplaceSourceOptions,
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
    const w = this.#writer()
    const wstmt = (name: string, sql: string) => this.#wstmt(name, sql)
    const clear = () => wstmt('stg_clear', 'DELETE FROM temp.staging').run()
    clear()
    try {
      // ----- 1. staging, one short temp-only transaction per batch -----
      const stage = wstmt(
        'stg_ins',
        'INSERT OR IGNORE INTO temp.staging (name, version, server_json, content_hash, search_text, ' +
          'up_status, up_published, up_updated, up_updated_ms, up_latest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      )
      const it = servers[Symbol.iterator]()
      let done = false
      try {
        while (!done) {
          w.exec('BEGIN')
          try {
            for (let i = 0; i < BATCH; i++) {
              const next = it.next()
              if (next.done) {
                done = true
                break
              }
              const server = next.value
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
            w.exec('COMMIT')
          } catch (err) {
            w.exec('ROLLBACK')
            throw err
          }
          if (!done) await this.#pause()
        }
      } finally {
        if (!done) it.return?.()
      }

      // ----- 2. the diff, applied in one transaction -----
      await this.#writeTransaction(async (pause) => {
        const stagedMax = Number(
          wstmt('stg_max', 'SELECT COALESCE(MAX(rowid), 0) AS m FROM temp.staging').get()?.m ?? 0,
        )
        const ids = wstmt(
          'sv_id_span',
          'SELECT COALESCE(MIN(id), 0) AS lo, COALESCE(MAX(id), -1) AS hi FROM source_versions WHERE source = ?',
        ).get(source)
        const idHi = Number(ids?.hi ?? -1)

        // Removed versions: what the source held and no longer lists (windows of the id space).
        const removed = wstmt(
          'diff_removed',
          'SELECT id, name FROM source_versions sv WHERE sv.id >= ? AND sv.id < ? AND sv.source = ? ' +
            'AND NOT EXISTS (SELECT 1 FROM temp.staging s WHERE s.name = sv.name AND s.version = sv.version)',
        )
        const del = wstmt('sv_del', 'DELETE FROM source_versions WHERE id = ?')
        for (let lo = Number(ids?.lo ?? 0); lo <= idHi; lo += BATCH) {
          for (const row of removed.all(lo, lo + BATCH, source)) {
            del.run(Number(row.id))
            stats.removed++
            changed(row.name)
          }
          await pause()
        }

        const inChunk = 's.rowid > ? AND s.rowid <= ?'
        const differs =
          "(sv.content_hash <> s.content_hash OR sv.status <> COALESCE(s.up_status, 'active') " +
          'OR (s.up_published IS NOT NULL AND s.up_published <> sv.published_at) ' +
          'OR (s.up_updated IS NOT NULL AND s.up_updated <> sv.updated_at))'
        // Changed versions: new content, or different upstream-owned metadata. publishedAt carries
        // over; updatedAt moves only when the document changed (or upstream says). CROSS JOIN keeps
        // the chunk of staging as the outer loop (else SQLite walks the whole source per chunk).
        const updatedRows = wstmt(
          'diff_updated',
          'SELECT sv.id AS id, sv.name AS name, (sv.content_hash <> s.content_hash OR ' +
            "sv.status <> COALESCE(s.up_status, 'active')) AS counted, " +
            "s.server_json AS server_json, s.content_hash AS content_hash, COALESCE(s.up_status, 'active') AS status, " +
            'COALESCE(s.up_published, sv.published_at) AS published_at, ' +
            'COALESCE(s.up_updated, CASE WHEN sv.content_hash <> s.content_hash THEN ? ELSE sv.updated_at END) AS updated_at, ' +
            'COALESCE(s.up_updated_ms, CASE WHEN sv.content_hash <> s.content_hash THEN ? ELSE sv.updated_ms END) AS updated_ms, ' +
            's.search_text AS search_text ' +
            'FROM temp.staging s CROSS JOIN source_versions sv ' +
            'ON sv.source = ? AND sv.name = s.name AND sv.version = s.version ' +
            `WHERE ${inChunk} AND ${differs}`,
        )
        const update = wstmt(
          'sv_upd',
          'UPDATE source_versions SET server_json = ?, content_hash = ?, status = ?, published_at = ?, ' +
            'updated_at = ?, updated_ms = ?, search_text = ? WHERE id = ?',
        )
        const newNotIn =
          'NOT EXISTS (SELECT 1 FROM source_versions sv WHERE sv.source = ? AND sv.name = s.name AND sv.version = s.version)'
        const addedRows = wstmt(
          'diff_added',
          `SELECT s.name AS name FROM temp.staging s WHERE ${inChunk} AND ${newNotIn}`,
        )
        const add = wstmt(
          'sv_add',
          'INSERT INTO source_versions (source, name, version, server_json, content_hash, status, ' +
            'published_at, updated_at, updated_ms, is_latest, search_text) ' +
            "SELECT ?, s.name, s.version, s.server_json, s.content_hash, COALESCE(s.up_status, 'active'), " +
            'COALESCE(s.up_published, ?), COALESCE(s.up_updated, ?), COALESCE(s.up_updated_ms, ?), 0, s.search_text ' +
            `FROM temp.staging s WHERE ${inChunk} AND ${newNotIn}`,
        )
        for (let lo = 0; lo < stagedMax; lo += BATCH) {
          const hi = lo + BATCH
          for (const row of updatedRows.all(nowIso, nowMs, source, lo, hi)) {
            if (Number(row.counted) === 1) stats.updated++
            changed(row.name)
            update.run(...UPDATED_COLUMNS.map((c) => row[c] as SQLInputValue))
          }
          for (const row of addedRows.iterate(lo, hi, source)) {
            stats.added++
            changed(row.name)
          }
          add.run(source, nowIso, nowIso, nowMs, lo, hi, source)
          await pause()
        }

        await this.#updateLatest(source, changedNames, bulk, pause)

        if (!bulk && changedNames.size === 0) return
        for (const [registry, sources] of this.#registries) {
          if (!sources.includes(source)) continue
          if (bulk) await this.#rebuildRegistryInChunks(registry, pause)
          else for (const name of changedNames) this.#rebuildName(registry, name)
        }
      })
    } finally {
      // Free the staged copy now rather than at the next sync.
      if (this.#wdb) clear()
    }
    stats.skipped = skipped
    return stats
  }

  async retainSources(sources: string[]): Promise<void> {
    return this.#exclusive(async () => this.#retainSources(sources))
  }

  #retainSources(sources: string[]): void {
    const keep = new Set(sources)
    const present = this.#wstmt('src_names', 'SELECT DISTINCT source FROM source_versions')
      .all()
      .map((r) => String(r.source))
    const drop = present.filter((s) => !keep.has(s))
    if (drop.length === 0) return
    this.#syncTransaction(() => {
      for (const s of drop) {
        this.#wstmt('src_drop', 'DELETE FROM source_versions WHERE source = ?').run(s)
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

  #writer(): DatabaseSync {
    if (!this.#wdb) throw new ToolgateError('ERR_STORAGE', 'storage: the store is not open')
    return this.#wdb
  }

  #wstmt(name: string, sql: string): StatementSync {
    let s = this.#wstatements.get(name)
    if (!s) {
      s = this.#writer().prepare(sql)
      this.#wstatements.set(name, s)
    }
    return s
  }

  // Runs `fn` after every write queued before it, whatever their outcome.
  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(() => {
      if (this.#closing) throw new ToolgateError('ERR_STORAGE', 'storage: the store is closing')
      return fn()
    })
    this.#queue = run.catch(() => undefined)
    return run
  }

  // Lets the event loop run (requests, /health); a close() meanwhile aborts the write.
  async #pause(): Promise<void> {
    await tick()
    if (this.#closing) throw new ToolgateError('ERR_STORAGE', 'storage: the store is closing')
  }

  #syncTransaction(fn: () => void): void {
    const db = this.#writer()
    db.exec('BEGIN IMMEDIATE')
    try {
      fn()
      db.exec('COMMIT')
      this.#committed()
    } catch (err) {
      db.exec('ROLLBACK')
      throw err
    }
  }

  #committed(): void {
    this.#writes++
    if (this.#wdb === this.#db) return
    // One checkpoint at a time; a commit during one asks for another afterwards. A failure (a
    // reader holding the log, a full disk) is harmless: the log is kept and the next one retries.
    if (this.#checkpointing) {
      this.#checkpointAgain = true
      return
    }
    const run = async (): Promise<void> => {
      do {
        this.#checkpointAgain = false
        await checkpointInWorker(this.path, this.#busyTimeoutMs).catch(() => undefined)
      } while (this.#checkpointAgain && !this.#closing)
    }
    this.#checkpointing = run().finally(() => (this.#checkpointing = undefined))
  }

  // One write transaction whose body may yield (`pause`) when readers have their own connection;
  // with a single connection, yielding would expose uncommitted rows to readers, so it does not.
  async #writeTransaction(fn: (pause: () => Promise<void>) => Promise<void>): Promise<void> {
    const db = this.#writer()
    const pause = db === this.#db ? async () => {} : () => this.#pause()
    db.exec('BEGIN IMMEDIATE')
    try {
      await fn(pause)
      db.exec('COMMIT')
      this.#committed()
    } catch (err) {
      if (db.isTransaction) db.exec('ROLLBACK')
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

  // isLatest per name of one source, recomputed only for names whose versions changed (all of the
  // source's names when `bulk`, a chunk of about BATCH rows at a time, whole names per chunk).
  async #updateLatest(
    source: string,
    names: Set<string>,
    bulk: boolean,
    pause: () => Promise<void>,
  ): Promise<void> {
    if (!bulk && names.size === 0) return
    const set = this.#wstmt('latest_set', 'UPDATE source_versions SET is_latest = ? WHERE id = ?')
    const decide = (group: LatestRow[]) => {
      const best = chooseLatest(group)
      for (const v of group) {
        const want = v === best ? 1 : 0
        if (v.is_latest !== want) set.run(want, v.id)
      }
    }
    const select =
      'SELECT sv.id AS id, sv.name AS name, sv.version AS version, sv.published_at AS published_at, ' +
      'sv.is_latest AS is_latest, s.up_latest AS up_latest FROM source_versions sv ' +
      'LEFT JOIN temp.staging s ON s.name = sv.name AND s.version = sv.version WHERE sv.source = ?'
    if (!bulk) {
      const one = this.#wstmt('latest_name', `${select} AND sv.name = ?`)
      for (const name of names) {
        const group = one.all(source, name) as unknown as LatestRow[]
        if (group.length > 0) decide(group)
      }
      return
    }
    const boundary = this.#wstmt(
      'latest_boundary',
      'SELECT name FROM source_versions WHERE source = ? AND name > ? ORDER BY name LIMIT 1 OFFSET ?',
    )
    const upTo = this.#wstmt(
      'latest_upto',
      `${select} AND sv.name > ? AND sv.name <= ? ORDER BY sv.name`,
    )
    const rest = this.#wstmt('latest_rest', `${select} AND sv.name > ? ORDER BY sv.name`)
    let after = ''
    for (;;) {
      const edge = boundary.get(source, after, BATCH)?.name as string | undefined
      const rows = (edge === undefined
        ? rest.all(source, after)
        : upTo.all(source, after, edge)) as unknown as LatestRow[]
      let group: LatestRow[] = []
      for (const r of rows) {
        if (group.length > 0 && group[0]?.name !== r.name) {
          decide(group)
          group = []
        }
        group.push(r)
      }
      if (group.length > 0) decide(group)
      if (edge === undefined) return
      after = edge
      await pause()
    }
  }

  // Precedence (contract §1): a name present in several sources of a registry is served, with all
  // its versions, from the source listed first.
  #rebuildRegistry(registry: string): void {
    this.#wstmt('re_del_all', 'DELETE FROM registry_entries WHERE registry = ?').run(registry)
    this.#wstmt('re_ins_all', rebuildSql('')).run(registry)
  }

  // As #rebuildRegistry, one range of names at a time (about BATCH source rows each).
  async #rebuildRegistryInChunks(registry: string, pause: () => Promise<void>): Promise<void> {
    const boundary = this.#wstmt(
      're_boundary',
      'SELECT name FROM source_versions WHERE name > ? ORDER BY name LIMIT 1 OFFSET ?',
    )
    const delUpTo = this.#wstmt(
      're_del_upto',
      'DELETE FROM registry_entries WHERE registry = ? AND name > ? AND name <= ?',
    )
    const delRest = this.#wstmt(
      're_del_rest',
      'DELETE FROM registry_entries WHERE registry = ? AND name > ?',
    )
    const insUpTo = this.#wstmt('re_ins_upto', rebuildSql(' AND sv.name > ? AND sv.name <= ?'))
    const insRest = this.#wstmt('re_ins_rest', rebuildSql(' AND sv.name > ?'))
    let after = ''
    for (;;) {
      const edge = boundary.get(after, BATCH)?.name as string | undefined
      if (edge === undefined) {
        delRest.run(registry, after)
        insRest.run(registry, after)
        return
      }
      delUpTo.run(registry, after, edge)
      insUpTo.run(registry, after, edge)
      after = edge
      await pause()
    }
  }

  #rebuildName(registry: string, name: string): void {
    this.#wstmt('re_del_name', 'DELETE FROM registry_entries WHERE registry = ? AND name = ?').run(
      registry,
      name,
    )
    this.#wstmt(
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

// Recomputes a registry's effective rows, for all names or those matching `names` (a condition on
// sv.name with its parameters after the registry's).
function rebuildSql(names: string): string {
  return (
    'INSERT INTO registry_entries (registry, name, version, entry_id, updated_ms, is_latest, search_text) ' +
    'SELECT registry, name, version, id, updated_ms, is_latest, search_text FROM (' +
    '  SELECT rs.registry AS registry, sv.name AS name, sv.version AS version, sv.id AS id, ' +
    '    sv.updated_ms AS updated_ms, sv.is_latest AS is_latest, sv.search_text AS search_text, ' +
    '    rs.position AS position, MIN(rs.position) OVER (PARTITION BY sv.name) AS best ' +
    '  FROM source_versions sv JOIN registry_sources rs ON rs.source = sv.source ' +
    `  WHERE rs.registry = ?${names}` +
    ') WHERE position = best'
  )
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
