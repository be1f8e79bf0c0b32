import {mkdirSync} from 'node:fs'
import {dirname} from 'node:path'
import type {DatabaseSync, StatementSync} from 'node:sqlite'
import {ToolgateError} from '../errors.ts'
import {decodeCursor, encodeCursor} from './cursor.ts'
import {pickLatest} from './latest.ts'
import {MIGRATIONS, type Migration} from './migrations.ts'
import {checkRecord, prepareRecord, type PreparedRecord} from './record.ts'
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

interface ExistingRow {
  id: number
  name: string
  version: string
  content_hash: string
  status: string
  published_at: string
  updated_at: string
  is_latest: number
}

interface Planned {
  rec: PreparedRecord
  status: OfficialMeta['status']
  publishedAt: string
  updatedAt: string
  isLatest: boolean
  old: ExistingRow | undefined
}

const ENTRY_COLUMNS =
  'sv.name AS name, sv.version AS version, sv.server_json AS server_json, sv.status AS status, ' +
  'sv.published_at AS published_at, sv.updated_at AS updated_at, sv.is_latest AS is_latest'

const key = (name: string, version: string) => `${name}\u0000${version}`

export class SqliteRegistryStore implements RegistryStore {
  readonly path: string
  #busyTimeoutMs: number
  #db: DatabaseSync | undefined
  #statements = new Map<string, StatementSync>()
  #registries = new Map<string, string[]>()

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
    servers: ServerJson[],
    now: Date,
    options: ReplaceSourceOptions = {},
  ): Promise<SyncStats> {
    const nowIso = now.toISOString()
    const trust = options.trustOfficialMeta === true
    const stats: SyncStats = {source, versions: 0, added: 0, updated: 0, removed: 0, skipped: 0}

    const existing = new Map<string, ExistingRow>()
    const rows = this.#stmt(
      'src_existing',
      'SELECT id, name, version, content_hash, status, published_at, updated_at, is_latest ' +
        'FROM source_versions WHERE source = ?',
    ).all(source) as unknown as ExistingRow[]
    for (const row of rows) existing.set(key(row.name, row.version), row)

    // Plan every version: carry publishedAt over for versions we already hold, move updatedAt only
    // when the stored document changed (or when a trusted upstream says so).
    const planned = new Map<string, Planned>()
    const byName = new Map<string, Planned[]>()
    for (const server of servers) {
      if (checkRecord(server) !== undefined) {
        stats.skipped = (stats.skipped ?? 0) + 1
        continue
      }
      const rec = prepareRecord(server, trust)
      const k = key(rec.name, rec.version)
      if (planned.has(k)) {
        // First occurrence wins; a source listing one version twice is a data error upstream.
        stats.skipped = (stats.skipped ?? 0) + 1
        continue
      }
      const old = existing.get(k)
      const up = rec.official
      const changed = !old || old.content_hash !== rec.hash
      const p: Planned = {
        rec,
        old,
        status: up?.status ?? 'active',
        publishedAt: up?.publishedAt ?? old?.published_at ?? nowIso,
        updatedAt: up?.updatedAt ?? (changed ? nowIso : (old?.updated_at ?? nowIso)),
        isLatest: false,
      }
      planned.set(k, p)
      const list = byName.get(rec.name)
      if (list) list.push(p)
      else byName.set(rec.name, [p])
    }
    for (const versions of byName.values()) markLatest(versions)

    const changedNames = new Set<string>()
    this.#transaction(() => {
      const del = this.#stmt('sv_del', 'DELETE FROM source_versions WHERE id = ?')
      for (const [k, row] of existing) {
        if (planned.has(k)) continue
        del.run(row.id)
        stats.removed++
        changedNames.add(row.name)
      }
      const insert = this.#stmt(
        'sv_ins',
        'INSERT INTO source_versions (source, name, version, server_json, content_hash, status, ' +
          'published_at, updated_at, updated_ms, is_latest, search_text) ' +
          'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      )
      const update = this.#stmt(
        'sv_upd',
        'UPDATE source_versions SET server_json = ?, content_hash = ?, status = ?, published_at = ?, ' +
          'updated_at = ?, updated_ms = ?, is_latest = ?, search_text = ? WHERE id = ?',
      )
      for (const p of planned.values()) {
        const {rec, old} = p
        const latest = p.isLatest ? 1 : 0
        const updatedMs = Date.parse(p.updatedAt)
        if (!old) {
          insert.run(
            source,
            rec.name,
            rec.version,
            rec.json,
            rec.hash,
            p.status,
            p.publishedAt,
            p.updatedAt,
            updatedMs,
            latest,
            rec.searchText,
          )
          stats.added++
          changedNames.add(rec.name)
          continue
        }
        const contentChanged = old.content_hash !== rec.hash
        if (
          contentChanged ||
          old.status !== p.status ||
          old.published_at !== p.publishedAt ||
          old.updated_at !== p.updatedAt ||
          old.is_latest !== latest
        ) {
          update.run(
            rec.json,
            rec.hash,
            p.status,
            p.publishedAt,
            p.updatedAt,
            updatedMs,
            latest,
            rec.searchText,
            old.id,
          )
          if (contentChanged || old.status !== p.status) stats.updated++
          changedNames.add(rec.name)
        }
      }
      if (changedNames.size === 0) return
      for (const [registry, sources] of this.#registries) {
        if (!sources.includes(source)) continue
        if (changedNames.size > FULL_REBUILD_THRESHOLD) this.#rebuildRegistry(registry)
        else for (const name of changedNames) this.#rebuildName(registry, name)
      }
    })
    stats.versions = planned.size
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
      `list_${shape}`,
      `SELECT ${ENTRY_COLUMNS} FROM registry_entries re ` +
        'JOIN source_versions sv ON sv.id = re.entry_id ' +
        `WHERE ${where.join(' AND ')} ORDER BY re.name, re.version LIMIT ?`,
    )
    const rows = stmt.all(...params) as unknown as EntryRow[]
    const more = rows.length > limit
    if (more) rows.length = limit
    const result: ListResult = {servers: rows.map(toEntry)}
    const last = rows[rows.length - 1]
    if (more && last) result.nextCursor = encodeCursor({name: last.name, version: last.version})
    return result
  }

  async listVersions(registry: string, name: string): Promise<ServerEntry[] | undefined> {
    this.#requireRegistry(registry)
    const rows = this.#stmt(
      'versions',
      `SELECT ${ENTRY_COLUMNS} FROM registry_entries re JOIN source_versions sv ON sv.id = re.entry_id ` +
        'WHERE re.registry = ? AND re.name = ? ORDER BY re.version',
    ).all(registry, name) as unknown as EntryRow[]
    return rows.length === 0 ? undefined : rows.map(toEntry)
  }

  async getVersion(
    registry: string,
    name: string,
    version: string,
  ): Promise<ServerEntry | undefined> {
    this.#requireRegistry(registry)
    const row =
      version === 'latest'
        ? this.#stmt(
            'get_latest',
            `SELECT ${ENTRY_COLUMNS} FROM registry_entries re JOIN source_versions sv ON sv.id = re.entry_id ` +
              'WHERE re.registry = ? AND re.name = ? AND re.is_latest = 1 LIMIT 1',
          ).get(registry, name)
        : this.#stmt(
            'get_version',
            `SELECT ${ENTRY_COLUMNS} FROM registry_entries re JOIN source_versions sv ON sv.id = re.entry_id ` +
              'WHERE re.registry = ? AND re.name = ? AND re.version = ?',
          ).get(registry, name, version)
    return row ? toEntry(row as unknown as EntryRow) : undefined
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
    } catch (err) {
      db.exec('ROLLBACK')
      throw err
    }
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

function markLatest(versions: Planned[]): void {
  // A trusted upstream that marks exactly one version latest is believed; otherwise our rule.
  const flagged = versions.filter((v) => v.rec.official?.isLatest === true)
  const allFlagged = versions.every((v) => typeof v.rec.official?.isLatest === 'boolean')
  if (allFlagged && flagged.length === 1) {
    for (const v of versions) v.isLatest = v === flagged[0]
    return
  }
  const best = pickLatest(
    versions.map((v) => ({version: v.rec.version, publishedAt: v.publishedAt, v})),
  )
  for (const v of versions) v.isLatest = v === best?.v
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
