import {channel} from 'node:diagnostics_channel'

/**
 * The steps of a source sync, published on a diagnostics channel so a profiler can line them up
 * with what else happened meanwhile (bench/serve-postgres.bench.ts with BENCH_PG_PROBE=1 relates
 * readers' slow requests to the phase they fell in). Publishing costs nothing while nobody
 * subscribes. Each message: `{source, phase, at}` (`at`: epoch ms).
 * - `reading`: the source is fetched or read and checked (a file: the scan in its worker);
 * - `staging`: records parsed, validated and written to the store's staging table (`worker: true`
 *   when the PostgreSQL store prepares them in a worker thread);
 * - `applying`: the difference written (removed, changed, added versions);
 * - `latest`: isLatest recomputed for the changed names;
 * - `rebuilding`: the registries fed by the source re-materialised (and committed);
 * - `done`: the store has the new data (or reported why not).
 */
export const SYNC_PHASE_CHANNEL = 'toolgate:registry:sync-phase'

export type SyncPhase = 'reading' | 'staging' | 'applying' | 'latest' | 'rebuilding' | 'done'

export interface SyncPhaseMessage {
  source: string
  phase: SyncPhase
  at: number
  worker?: boolean
}

const phases = channel(SYNC_PHASE_CHANNEL)

export function syncPhase(
  source: string,
  phase: SyncPhase,
  detail: Pick<SyncPhaseMessage, 'worker'> = {},
): void {
  if (phases.hasSubscribers)
    phases.publish({source, phase, at: Date.now(), ...detail} satisfies SyncPhaseMessage)
}
