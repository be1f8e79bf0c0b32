import {ToolgateError} from '../errors.ts'
import type {Logger} from '../log/logger.ts'
import type {SourceSample, StoreSample} from '../metrics/serve-metrics.ts'
import type {PostgresRegistryStore} from '../registry/postgres-store.ts'
import {SourceSyncer} from '../registry/sources/syncer.ts'
import type {RegistryStore, SourceConfig, SyncCoordinator} from '../registry/types.ts'

/**
 * What `serve` needs from the source syncer: an initial load that throws naming the source when it
 * fails, readiness (every source loaded at least once), per-source totals for /metrics, and stop.
 */
export interface SourceRuntime {
  start(): Promise<void>
  /** Syncs one source now (after any sync in progress); throws when that sync failed. */
  syncNow(source: string): Promise<void>
  isReady(): boolean
  samples(): SourceSample[]
  stop(): Promise<void>
}

export function createSourceRuntime(
  sources: SourceConfig[],
  store: RegistryStore,
  logger: Logger,
  coordinator?: SyncCoordinator,
): SourceRuntime {
  const syncer = new SourceSyncer({
    store,
    sources,
    logger: logger.child({component: 'sources'}),
    ...(coordinator ? {coordinator} : {}),
  })
  return {
    start: () => syncer.start(),
    syncNow: async (source) => {
      const before = syncer.stats().find((s) => s.name === source)
      const stats = await syncer.syncNow(source)
      // A failed sync keeps the last good data and records why; the caller must not say "done".
      if (stats.lastError !== undefined && stats.failures !== before?.failures)
        throw new ToolgateError(
          'ERR_STORAGE',
          `source "${source}" did not sync: ${stats.lastError}`,
        )
      // No sync happened at all (the claim failed, or another replica held the source too long).
      if (stats.syncs === before?.syncs)
        throw new ToolgateError(
          'ERR_STORAGE_UNAVAILABLE',
          `source "${source}" could not be synced now; the change is stored and will be served after the next sync`,
        )
    },
    isReady: () => syncer.isReady(),
    samples: () =>
      syncer.stats().map((s) => ({
        source: s.name,
        syncs: s.syncs + s.failures,
        errors: s.failures,
        ...(s.lastSuccessAt ? {lastSuccessMs: s.lastSuccessAt.getTime()} : {}),
        versions: s.versions,
        ...(s.lastDurationMs !== undefined ? {lastDurationMs: s.lastDurationMs} : {}),
      })),
    stop: () => syncer.stop(),
  }
}

/**
 * What /metrics shows of a shared store: whether it answers, the pool in use, and each source's
 * last success on any replica (this replica's own samples only know its own syncs).
 */
export async function storeSamples(store: PostgresRegistryStore): Promise<StoreSample> {
  const pool = store.poolUse()
  try {
    const rows = await store.syncStatus()
    return {
      up: true,
      pool,
      lastSuccessMs: new Map(
        rows.flatMap((r) => (r.lastSuccessAt ? [[r.source, r.lastSuccessAt.getTime()]] : [])),
      ),
    }
  } catch {
    return {up: false, pool, lastSuccessMs: new Map()}
  }
}
