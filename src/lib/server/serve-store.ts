import type {ServeConfig} from '../config/serve-config.ts'
import {isToolgateError} from '../errors.ts'
import type {Logger} from '../log/logger.ts'
import type {RegistryTextReader, VersionedStore} from '../registry-api/handler.ts'
import {PostgresRegistryStore} from '../registry/postgres-store.ts'
import {SqliteRegistryStore} from '../registry/sqlite-store.ts'
import type {RegistryStore} from '../registry/types.ts'

/**
 * The store `serve` runs on (contract §1 "Storage"): embedded SQLite by default, PostgreSQL when
 * `storage.postgres` is set. Both offer the text reads and the data version the response cache
 * needs, and `scanServers` for policy-filtered lists.
 */
export type ServeStore = RegistryStore & RegistryTextReader & VersionedStore

export function createServeStore(config: ServeConfig): ServeStore {
  const s = config.storage
  if (s.kind === 'sqlite') return new SqliteRegistryStore({path: s.path})
  const {kind: _kind, syncLeaseMs, ...connection} = s
  return new PostgresRegistryStore({connection, ...(syncLeaseMs ? {syncLeaseMs} : {})})
}

export interface OpenOptions {
  logger: Logger
  /** Stops the retries (shutdown while the database is still away). */
  signal: AbortSignal
  /** First delay between attempts; doubles up to `maxDelayMs`. */
  firstDelayMs?: number
  maxDelayMs?: number
}

/**
 * Opens the store, retrying with exponential backoff (and jitter, so replicas restarted together
 * do not reconnect in lockstep) while the database is unavailable: in Kubernetes the database often
 * comes up after the registry, and a replica should wait, not-ready, rather than crash-loop. Other
 * errors (bad credentials, a corrupt file, a failed migration) end the start at once.
 */
export async function openServeStore(store: ServeStore, opts: OpenOptions): Promise<void> {
  let delay = opts.firstDelayMs ?? 500
  const max = opts.maxDelayMs ?? 15_000
  for (let attempt = 1; ; attempt++) {
    try {
      await store.init()
      return
    } catch (err) {
      if (!isToolgateError(err, 'ERR_STORAGE_UNAVAILABLE') || opts.signal.aborted) throw err
      const wait = Math.round(delay * (0.75 + Math.random() * 0.5))
      opts.logger.warn('database unavailable; retrying', {
        attempt,
        retry_in_ms: wait,
        error: err.message,
      })
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, wait)
        opts.signal.addEventListener('abort', () => (clearTimeout(t), resolve()), {once: true})
      })
      if (opts.signal.aborted) throw err
      delay = Math.min(max, delay * 2)
    }
  }
}

export function describeStorage(config: ServeConfig): Record<string, string | number> {
  const s = config.storage
  if (s.kind === 'sqlite') return {storage: 'sqlite', path: s.path}
  // Host and database only: never the URL, which may carry credentials of other kinds.
  let where: Record<string, string | number> = {}
  if (s.url !== undefined) {
    try {
      const u = new URL(s.url)
      where = {host: u.hostname, database: u.pathname.replace(/^\//, '')}
    } catch {
      where = {}
    }
  }
  return {
    storage: 'postgres',
    ...where,
    ...(s.host !== undefined ? {host: s.host} : {}),
    ...(s.database !== undefined ? {database: s.database} : {}),
  }
}
