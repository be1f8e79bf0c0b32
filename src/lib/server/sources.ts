import type {Logger} from '../log/logger.ts'
import type {SourceSample} from '../metrics/serve-metrics.ts'
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
  _store: RegistryStore,
  _logger: Logger,
): SourceRuntime {
  if (sources.length > 0) throw new Error('source syncing is not wired yet')
  return {
    async start() {},
    isReady: () => true,
    samples: () => [],
    async stop() {},
  }
}
