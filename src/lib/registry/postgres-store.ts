import {randomBytes} from 'node:crypto'
import {hostname} from 'node:os'
import type {Sql} from 'postgres'
import {ToolgateError} from '../errors.ts'
import {
  createPool,
  readDeadlineMs,
  storageError,
  type PgConnectionConfig,
} from './postgres/connect.ts'
import {
  abandonLease,
  claimLease,
  renewLease,
  syncRows,
  type SourceSyncRow,
} from './postgres/leases.ts'
import {runPgMigrations} from './postgres/migrations.ts'
import {
  selectPage,
  selectVersion,
  selectVersions,
  toEntry,
  toEntryText,
  type EntryRow,
} from './postgres/reads.ts'
import {loadRegistriesFrom, retainSourcesPg, setRegistriesPg} from './postgres/registries.ts'
import {NOTIFY_CHANNEL, replaceSourceTx} from './postgres/sync.ts'
import {publishedVersionsPg, publishVersionPg, setPublishedStatusPg} from './postgres/published.ts'
import type {
  ListQuery,
  OfficialMeta,
  PublishedInput,
  PublishedVersion,
  ListResult,
  RegistryDefinition,
  RegistryStore,
  ReplaceSourceOptions,
  ServerEntry,
  ServerJson,
  SyncClaim,
  SyncCoordinator,
  SyncLease,
  SyncStats,
} from './types.ts'

/**
 * `RegistryStore` on PostgreSQL (contract §1 "Scale-out"): several `serve` replicas share one
 * database and answer exactly as the SQLite store does (same materialised `registry_entries`, same
 * keyset pages, same search semantics). Beyond the SQLite store it:
 * - runs migrations under an advisory lock (postgres/migrations.ts);
 * - coordinates syncs with leases (postgres/leases.ts, `SyncCoordinator`);
 * - keeps `dataVersion()` in step with every replica's commits: each write bumps
 *   `store_state.generation` and NOTIFYs it; this store LISTENs, and also re-reads the generation
 *   every `pollMs` and on every (re)connection of the listener, so a missed notification (a
 *   database restart) delays an update by at most `pollMs` and never loses it; while the
 *   database does not answer, the data version is unknown and no cached body is served (a
 *   database that falls silent is noticed when a call reaches its deadline, readDeadlineMs);
 * - maps an unreachable database to ERR_STORAGE_UNAVAILABLE (503) and recovers by itself (the
 *   pool reconnects on the next query).
 */
export interface PostgresStoreOptions {
  connection: PgConnectionConfig
  /** This replica's name in sync leases (default: host name, pid and a random suffix). */
  holder?: string
  /** Lease of a source sync (default 60 s), renewed every third of it while the sync runs. */
  syncLeaseMs?: number
  /** Re-read of the generation (default 1 s): the bound on noticing a missed NOTIFY or an outage. */
  pollMs?: number
  env?: NodeJS.ProcessEnv
}

export class PostgresRegistryStore implements RegistryStore, SyncCoordinator {
  readonly holder: string
  readonly leaseMs: number
  readonly poolSize: number
  readonly readDeadlineMs: number
  #options: PostgresStoreOptions
  #sql: Sql | undefined
  #registries = new Map<string, string[]>()
  #generation: number | undefined
  #version = 0
  #inFlight = 0
  // Set while the database does not answer: the data version is then unknown (another replica
  // may reach the database and commit), so no cached body may be served as current.
  #degraded = false
  #poll: NodeJS.Timeout | undefined
  #polling = false
  #unlisten: (() => Promise<void>) | undefined
  #closed = false

  constructor(options: PostgresStoreOptions) {
    this.#options = options
    this.holder = options.holder ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`
    this.leaseMs = options.syncLeaseMs ?? 60_000
    this.poolSize = options.connection.poolSize ?? 10
    this.readDeadlineMs = readDeadlineMs(options.connection)
  }

  /**
   * Connects, migrates (once across replicas), loads the registry definitions and starts watching
   * the generation. Throws ERR_STORAGE_UNAVAILABLE while the database cannot be reached (serve
   * retries with backoff); may be called again after a failure.
   */
  async init(): Promise<void> {
    if (this.#unlisten) return
    this.#closed = false
    this.#sql ??= createPool(this.#options.connection, this.#options.env)
    const sql = this.#sql
    try {
      await runPgMigrations(sql)
      this.#registries = await loadRegistriesFrom(sql)
      await this.#refreshGeneration()
      const listener = await sql.listen(
        NOTIFY_CHANNEL,
        (payload) => this.#observe(Number(payload)),
        // Also on every reconnection of the listener: notifications sent meanwhile are lost.
        () => void this.#refreshGeneration().catch(() => undefined),
      )
      this.#unlisten = () => listener.unlisten()
    } catch (err) {
      throw storageError(err, 'opening the database')
    }
    const pollMs = this.#options.pollMs ?? 1000
    this.#poll = setInterval(() => this.#pollGeneration(), pollMs)
    this.#poll.unref()
  }

  async close(): Promise<void> {
    this.#closed = true
    if (this.#poll) clearInterval(this.#poll)
    this.#poll = undefined
    const unlisten = this.#unlisten
    this.#unlisten = undefined
    await unlisten?.().catch(() => undefined)
    const sql = this.#sql
    this.#sql = undefined
    await sql?.end({timeout: 5})
  }

  #db(): Sql {
    if (!this.#sql || this.#closed)
      throw new ToolgateError('ERR_STORAGE', 'storage: the store is not open')
    return this.#sql
  }

  /** Runs one database call, counting it for the pool gauge and mapping driver errors. */
  async #run<T>(doing: string, fn: (sql: Sql) => Promise<T>): Promise<T> {
    const sql = this.#db()
    this.#inFlight++
    try {
      return await fn(sql)
    } catch (err) {
      throw this.#failed(err, doing)
    } finally {
      this.#inFlight--
    }
  }

  #failed(err: unknown, doing: string): ToolgateError {
    const mapped = storageError(err, doing)
    if (mapped.code === 'ERR_STORAGE_UNAVAILABLE') this.#degraded = true
    return mapped
  }

  /**
   * Runs one short database call bounded by readDeadlineMs: every read a request, /readiness or
   * /metrics waits for, and the lease statements a sync waits for. Past the deadline the caller
   * gets ERR_STORAGE_UNAVAILABLE, so a request answers 503 rather than never. A sync's own
   * transaction is not bounded here: it may rightly take minutes, and its lease expires if it
   * hangs.
   *
   * The abandoned call is not cancelled: the server's statement_timeout ends it there, and the
   * driver's cancel (postgres 3.4) drops the promise of its cancel connection, whose failure, likely
   * when the database does not answer, would be an unhandled rejection. It keeps its connection,
   * and counts as in flight, until it settles.
   */
  #bounded<T>(doing: string, fn: (sql: Sql) => Promise<T>): Promise<T> {
    const sql = this.#db()
    this.#inFlight++
    let pending: Promise<T>
    try {
      pending = fn(sql)
    } catch (err) {
      this.#inFlight--
      return Promise.reject(this.#failed(err, doing))
    }
    const settled = pending.finally(() => this.#inFlight--)
    // The call may settle after the deadline; nobody waits for it then.
    settled.catch(() => undefined)
    let timer: NodeJS.Timeout | undefined
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new ToolgateError(
              'ERR_STORAGE_UNAVAILABLE',
              `storage: the database did not answer within ${this.readDeadlineMs} ms`,
            ),
          ),
        this.readDeadlineMs,
      )
    })
    return Promise.race([settled, expired])
      .catch((err: unknown) => {
        throw this.#failed(err, doing)
      })
      .finally(() => clearTimeout(timer))
  }

  #query = (text: string, params: unknown[]): Promise<EntryRow[]> =>
    this.#bounded(
      'reading the registry',
      (sql) =>
        sql.unsafe(text, params as never[], {prepare: true}) as unknown as Promise<EntryRow[]>,
    )

  #observe(generation: number): void {
    if (!Number.isFinite(generation)) return
    // Any difference, not only an increase: a database restored from a backup goes back in time.
    if (generation !== this.#generation) {
      this.#generation = generation
      this.#version++
    }
  }

  async #refreshGeneration(): Promise<void> {
    if (!this.#sql || this.#closed) return
    let rows
    try {
      rows = await this.#bounded(
        'reading the generation',
        (sql) => sql`SELECT generation FROM store_state WHERE id = 1`,
      )
    } catch (err) {
      this.#degraded = true
      throw err
    }
    if (this.#degraded) {
      this.#degraded = false
      this.#version++
    }
    this.#observe(Number(rows[0]?.generation))
  }

  /**
   * The poll's re-read, one at a time: over a silent network each would wait out its deadline on
   * a stuck connection, and a poll a second would pile them up.
   */
  #pollGeneration(): void {
    if (this.#polling) return
    this.#polling = true
    this.#refreshGeneration()
      .catch(() => undefined)
      .finally(() => (this.#polling = false))
  }

  async ping(): Promise<void> {
    await this.#bounded('ping', (sql) => sql`SELECT 1`)
  }

  /** Applied schema versions, oldest first (tests and diagnostics). */
  async schemaVersions(): Promise<number[]> {
    const rows = await this.#bounded(
      'reading the schema version',
      (sql) => sql`SELECT version FROM schema_migrations ORDER BY version`,
    )
    return rows.map((r) => Number(r.version))
  }

  async setRegistries(registries: RegistryDefinition[]): Promise<void> {
    const {map, generation} = await this.#run('declaring the registries', (sql) =>
      setRegistriesPg(sql, registries),
    )
    this.#registries = map
    if (generation !== undefined) this.#observe(generation)
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
    const {stats, generation} = await this.#run(`syncing source "${source}"`, (sql) =>
      sql.begin((tx) => replaceSourceTx(tx, source, servers, now, options)),
    )
    if (generation !== undefined) this.#observe(generation)
    // After a large change, fresh planner statistics at once rather than at autovacuum's pace
    // (a first load of 100,000 versions would otherwise be planned as an empty table).
    if (stats.added + stats.removed > 1000)
      void this.#run('analyze', (sql) => sql`ANALYZE source_versions, registry_entries`).catch(
        () => undefined,
      )
    return stats
  }

  async retainSources(sources: string[]): Promise<void> {
    const generation = await this.#run('dropping removed sources', (sql) =>
      retainSourcesPg(sql, sources),
    )
    if (generation !== undefined) this.#observe(generation)
  }

  #requireRegistry(registry: string): void {
    if (!this.#registries.has(registry))
      throw new ToolgateError('ERR_REGISTRY_NOT_FOUND', 'registry not found')
  }

  async listServers(registry: string, query: ListQuery): Promise<ListResult> {
    this.#requireRegistry(registry)
    const page = await selectPage(this.#query, registry, query)
    const result: ListResult = {servers: page.rows.map(toEntry)}
    if (page.next) result.nextCursor = page.next
    return result
  }

  async listServersText(
    registry: string,
    query: ListQuery,
  ): Promise<{servers: string[]; nextCursor?: string}> {
    this.#requireRegistry(registry)
    const page = await selectPage(this.#query, registry, query)
    const result: {servers: string[]; nextCursor?: string} = {servers: page.rows.map(toEntryText)}
    if (page.next) result.nextCursor = page.next
    return result
  }

  /**
   * Positions for lists filtered by policy (as the SQLite store's scanServers). The entry texts
   * come with the scan: a synchronous read per row is not possible over the network, and one
   * statement keeps the batch consistent.
   */
  async scanServers(
    registry: string,
    query: ListQuery,
  ): Promise<{
    rows: {name: string; version: string; entry(): string | undefined}[]
    more: boolean
  }> {
    this.#requireRegistry(registry)
    const page = await selectPage(this.#query, registry, query, 2048)
    return {
      rows: page.rows.map((r) => {
        const text = toEntryText(r)
        return {name: r.page_name, version: r.page_version, entry: () => text}
      }),
      more: page.next !== undefined,
    }
  }

  async listVersions(registry: string, name: string): Promise<ServerEntry[] | undefined> {
    this.#requireRegistry(registry)
    const rows = await selectVersions(this.#query, registry, name)
    return rows.length === 0 ? undefined : rows.map(toEntry)
  }

  async listVersionsText(registry: string, name: string): Promise<string[] | undefined> {
    this.#requireRegistry(registry)
    const rows = await selectVersions(this.#query, registry, name)
    return rows.length === 0 ? undefined : rows.map(toEntryText)
  }

  async getVersion(
    registry: string,
    name: string,
    version: string,
  ): Promise<ServerEntry | undefined> {
    this.#requireRegistry(registry)
    const row = await selectVersion(this.#query, registry, name, version)
    return row ? toEntry(row) : undefined
  }

  async getVersionText(
    registry: string,
    name: string,
    version: string,
  ): Promise<string | undefined> {
    this.#requireRegistry(registry)
    const row = await selectVersion(this.#query, registry, name, version)
    return row ? toEntryText(row) : undefined
  }

  /**
   * Changes whenever another commit may have changed what a read returns, on this replica or any
   * other (see the class comment); the response cache keys on it.
   */
  dataVersion(): number {
    // While degraded, a new value at every call: nothing cached matches it, so requests reach the
    // database and answer 503 until it is back.
    if (this.#degraded) return ++this.#version
    return this.#version
  }

  async countVersions(): Promise<number> {
    const rows = await this.#bounded(
      'counting versions',
      (sql) => sql`SELECT count(*)::int AS n FROM source_versions`,
    )
    return Number(rows[0]?.n ?? 0)
  }

  async countRegistryVersions(registry: string): Promise<number> {
    const rows = await this.#bounded(
      'counting versions',
      (sql) => sql`SELECT count(*)::int AS n FROM registry_entries WHERE registry = ${registry}`,
    )
    return Number(rows[0]?.n ?? 0)
  }

  // ----- managed sources -----

  publishVersion(source: string, v: PublishedInput, now: Date): Promise<'created' | 'exists'> {
    return this.#run(`publishing to source "${source}"`, (sql) =>
      publishVersionPg(sql, source, v, now),
    )
  }

  setPublishedStatus(
    source: string,
    name: string,
    version: string,
    status: OfficialMeta['status'],
    now: Date,
  ): Promise<boolean> {
    return this.#run(`setting a status in source "${source}"`, (sql) =>
      setPublishedStatusPg(sql, source, name, version, status, now),
    )
  }

  publishedVersions(source: string): Promise<PublishedVersion[]> {
    return this.#run(`reading source "${source}"`, (sql) => publishedVersionsPg(sql, source))
  }

  // ----- SyncCoordinator -----

  claimSync(source: string, intervalMs: number | undefined, force: boolean): Promise<SyncClaim> {
    return this.#bounded(`claiming the sync of source "${source}"`, (sql) =>
      claimLease(sql, this.holder, source, this.leaseMs, intervalMs, force),
    )
  }

  renewSync(source: string, lease: SyncLease): Promise<boolean> {
    return this.#bounded(`renewing the sync lease of "${source}"`, (sql) =>
      renewLease(sql, source, lease, this.leaseMs),
    )
  }

  abandonSync(source: string, lease: SyncLease): Promise<void> {
    return this.#bounded(`releasing the sync lease of "${source}"`, (sql) =>
      abandonLease(sql, source, lease),
    )
  }

  /** Every source's lease holder, last success and sync count, shared by all replicas. */
  syncStatus(): Promise<SourceSyncRow[]> {
    return this.#bounded('reading sync status', (sql) => syncRows(sql))
  }

  /** Database calls in progress and the pool's size (for /metrics). */
  poolUse(): {inFlight: number; max: number} {
    return {inFlight: this.#inFlight, max: this.poolSize}
  }

  /** The plan of a list query, for tests that guard against full scans. */
  async explain(registry: string, query: ListQuery): Promise<string> {
    let captured = ''
    await selectPage(
      async (text, params) => {
        const rows = await this.#run('explain', (sql) =>
          sql.unsafe(`EXPLAIN ${text}`, params as never[]),
        )
        captured = rows.map((r) => String(r['QUERY PLAN'])).join('\n')
        return []
      },
      registry,
      query,
    )
    return captured
  }
}
