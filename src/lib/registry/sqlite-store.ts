import {StoreConnections} from './sqlite/connections.ts'
import {explainList} from './sqlite/query.ts'
import * as reads from './sqlite/reads.ts'
import {loadRegistries, retainSources, setRegistries} from './sqlite/registries.ts'
import {replaceSource} from './sqlite/replace-source.ts'
import * as published from './sqlite/published.ts'
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
  SyncStats,
} from './types.ts'

/**
 * `RegistryStore` on Node's built-in SQLite (contract §1 "Storage"). One file, WAL mode, versioned
 * migrations. Writes (`replaceSource`, `setRegistries`) materialise each registry's effective rows
 * into `registry_entries`, so reads are index range scans: a page is `WHERE (name, version) > cursor
 * ORDER BY name, version LIMIT n+1`, costing the same at any depth (no OFFSET).
 *
 * This class is the facade; the work lives in ./sqlite/: connections.ts (the two connections,
 * statement caches, write queue, transactions, WAL checkpoints), query.ts + reads.ts (reads, as
 * objects or JSON text), replace-source.ts (sync: stage.ts, apply-diff.ts, latest-flags.ts,
 * rebuild.ts) and registries.ts (registry definitions, retained sources).
 */
export interface SqliteStoreOptions {
  /** Database file, or `:memory:`. Its directory is created 0700 when missing. */
  path: string
  /** How long a writer waits for another connection's lock before failing. */
  busyTimeoutMs?: number
  /** Runs the off-thread WAL checkpoint; injectable so tests can make the worker fail. */
  checkpoint?: (path: string, busyTimeoutMs: number) => Promise<unknown>
}

export class SqliteRegistryStore implements RegistryStore {
  readonly path: string
  #c: StoreConnections

  constructor(options: SqliteStoreOptions) {
    this.path = options.path
    this.#c = new StoreConnections(options.path, options.busyTimeoutMs ?? 5000, options.checkpoint)
  }

  async init(): Promise<void> {
    if (this.#c.db) return
    await this.#c.open()
    loadRegistries(this.#c)
  }

  /** Waits for the write in progress to stop at its next yield (rolled back), then closes. */
  async close(): Promise<void> {
    await this.#c.close()
  }

  /** Set when the file was corrupt at open: where it was moved (a fresh one replaced it). */
  get movedAside(): string | undefined {
    return this.#c.movedAside
  }

  async ping(): Promise<void> {
    this.#c.stmt('ping', 'SELECT 1 AS ok').get()
  }

  /** Applied schema versions, oldest first (for tests and diagnostics). */
  schemaVersions(): number[] {
    return this.#c
      .stmt('schema_versions', 'SELECT version FROM schema_migrations ORDER BY version')
      .all()
      .map((r) => Number(r.version))
  }

  async setRegistries(registries: RegistryDefinition[]): Promise<void> {
    return this.#c.exclusive(async () => setRegistries(this.#c, registries))
  }

  hasRegistry(name: string): boolean {
    return this.#c.registries.has(name)
  }

  async replaceSource(
    source: string,
    servers: Iterable<ServerJson>,
    now: Date,
    options: ReplaceSourceOptions = {},
  ): Promise<SyncStats> {
    return this.#c.exclusive(() => replaceSource(this.#c, source, servers, now, options))
  }

  async retainSources(sources: string[]): Promise<void> {
    return this.#c.exclusive(async () => retainSources(this.#c, sources))
  }

  async listServers(registry: string, query: ListQuery): Promise<ListResult> {
    return reads.listServers(this.#c, registry, query)
  }

  /**
   * `listServers` with each entry as its JSON text, joined from its stored columns (no JSON parse or
   * stringify per request). Byte-identical to `JSON.stringify` of the object path's entries.
   */
  async listServersText(
    registry: string,
    query: ListQuery,
  ): Promise<{servers: string[]; nextCursor?: string}> {
    return reads.listServersText(this.#c, registry, query)
  }

  /** Positions, entries on demand, for lists filtered by policy (see reads.scanServers). */
  async scanServers(
    registry: string,
    query: ListQuery,
  ): Promise<{rows: reads.ScannedRow[]; more: boolean}> {
    return reads.scanServers(this.#c, registry, query)
  }

  async listVersions(registry: string, name: string): Promise<ServerEntry[] | undefined> {
    return reads.listVersions(this.#c, registry, name)
  }

  /** `listVersions` with each entry as its JSON text (as `listServersText`). */
  async listVersionsText(registry: string, name: string): Promise<string[] | undefined> {
    return reads.listVersionsText(this.#c, registry, name)
  }

  async getVersion(
    registry: string,
    name: string,
    version: string,
  ): Promise<ServerEntry | undefined> {
    return reads.getVersion(this.#c, registry, name, version)
  }

  /** `getVersion` as the JSON text of the single-version body (as `listServersText`). */
  async getVersionText(
    registry: string,
    name: string,
    version: string,
  ): Promise<string | undefined> {
    return reads.getVersionText(this.#c, registry, name, version)
  }

  /**
   * Changes whenever the data a read can return may have changed: every write through this store,
   * and every commit by another connection to the same file (SQLite's `PRAGMA data_version`), so a
   * response cache keyed on it is never stale, even with several processes sharing the file.
   */
  dataVersion(): number {
    return this.#c.dataVersion()
  }

  async countVersions(): Promise<number> {
    const row = this.#c.stmt('count', 'SELECT COUNT(*) AS n FROM source_versions').get()
    return Number(row?.n ?? 0)
  }

  async publishVersion(
    source: string,
    version: PublishedInput,
    now: Date,
  ): Promise<'created' | 'exists'> {
    return this.#c.exclusive(async () => published.publishVersion(this.#c, source, version, now))
  }

  async setPublishedStatus(
    source: string,
    name: string,
    version: string,
    status: OfficialMeta['status'],
    now: Date,
  ): Promise<boolean> {
    return this.#c.exclusive(async () =>
      published.setPublishedStatus(this.#c, source, name, version, status, now),
    )
  }

  async publishedVersions(source: string): Promise<PublishedVersion[]> {
    // On the writer's connection, after queued writes: a sync right after a publish sees it.
    return this.#c.exclusive(async () => published.publishedVersions(this.#c, source))
  }

  /** Number of effective versions a registry serves (for metrics and tests). */
  countRegistryVersions(registry: string): number {
    const row = this.#c
      .stmt('count_reg', 'SELECT COUNT(*) AS n FROM registry_entries WHERE registry = ?')
      .get(registry)
    return Number(row?.n ?? 0)
  }

  /** The query plan of a list query shape, for tests that guard against full scans. */
  explainList(registry: string, query: ListQuery): string[] {
    return explainList(this.#c, registry, query)
  }
}
