import type {Logger} from '../log/logger.ts'
import type {SourceSample} from '../metrics/serve-metrics.ts'
import {SourceSyncer} from '../registry/sources/syncer.ts'
import type {RegistryStore, SourceConfig} from '../registry/types.ts'

/**
 * What `serve` needs from the source syncer: an initial load that throws naming the source when it
 * fails, readiness (every source loaded at least once), per-source totals for /metrics, and stop.
 */
export interface SourceRuntime {
  start(): Promise<void>
  isReady(): boolean
  samples(): SourceSample[]
  stop(): Promise<void>
}

export function createSourceRuntime(
  sources: SourceConfig[],
  store: RegistryStore,
  logger: Logger,
): SourceRuntime {
  const syncer = new SourceSyncer({store, sources, logger: logger.child({component: 'sources'})})
  return {
    start: () => syncer.start(),
    isReady: () => syncer.isReady(),
    samples: () =>
      syncer.stats().map((s) => ({
        source: s.name,
        syncs: s.syncs + s.failures,
        errors: s.failures,
        ...(s.lastSuccessAt ? {lastSuccessMs: s.lastSuccessAt.getTime()} : {}),
        versions: s.versions,
      })),
    stop: () => syncer.stop(),
  }
}
