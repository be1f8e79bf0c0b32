import {subscribe, unsubscribe} from 'node:diagnostics_channel'
import {SYNC_PHASE_CHANNEL, type SyncPhaseMessage} from '../../src/lib/registry/sync-phases.ts'

/** Records the sync phases announced for `source` until `stop()`. */
export function recordSyncPhases(source: string): {phases: string[]; stop(): void} {
  const phases: string[] = []
  const listener = (message: unknown) => {
    const m = message as SyncPhaseMessage
    if (m.source === source) phases.push(m.phase)
  }
  subscribe(SYNC_PHASE_CHANNEL, listener)
  return {phases, stop: () => void unsubscribe(SYNC_PHASE_CHANNEL, listener)}
}
