import type {ReplaceSourceOptions, ServerJson, SyncStats} from '../types.ts'
import {applyDiff} from './apply-diff.ts'
import type {StoreConnections} from './connections.ts'
import {updateLatest} from './latest-flags.ts'
import {rebuildName, rebuildRegistryInChunks} from './rebuild.ts'
import {mergeSearchIndex} from './search.ts'
import {stageRecords} from './stage.ts'
import {syncPhase} from '../sync-phases.ts'

// Above this many changed names a full rebuild of a registry is cheaper than per-name updates.
const FULL_REBUILD_THRESHOLD = 2000

/**
 * Replaces everything `source` holds with `servers`. A sync is cooperative (the event loop keeps
 * answering /health and reads during it):
 * 1. the records are staged into a temp table (stage.ts); nothing visible to readers changes;
 * 2. the diff is applied in one write transaction, BATCH rows at a time (apply-diff.ts), then the
 *    isLatest flags and the registries fed by the source are recomputed. On a database file the
 *    writes go through a second connection, so the transaction stays open across yields while
 *    readers (their own connection, WAL) keep seeing the last committed data until the COMMIT:
 *    a reader sees the old set or the new one, never a mix. With `:memory:` (one connection,
 *    tests) step 2 cannot yield and runs in one go.
 */
export async function replaceSource(
  c: StoreConnections,
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
  const clear = () => c.wstmt('stg_clear', 'DELETE FROM temp.staging').run()
  clear()
  let skipped: number
  try {
    syncPhase(source, 'staging')
    skipped = await stageRecords(c, servers, trust, stats)
    await c.writeTransaction(async (pause) => {
      syncPhase(source, 'applying')
      await applyDiff(c, source, nowIso, nowMs, stats, changed, pause)
      if (!bulk && changedNames.size === 0) return
      syncPhase(source, 'latest')
      await updateLatest(c, source, changedNames, bulk, pause)
      syncPhase(source, 'rebuilding')
      await mergeSearchIndex(c, pause)
      for (const [registry, sources] of c.registries) {
        if (!sources.includes(source)) continue
        if (bulk) await rebuildRegistryInChunks(c, registry, pause)
        else for (const name of changedNames) rebuildName(c, registry, name)
      }
    })
  } finally {
    // Free the staged copy now rather than at the next sync. A failure here (a closing store, a
    // busy database) must not replace the error that ended the sync; the next sync clears anyway.
    try {
      if (c.wdb) clear()
    } catch {
      // ignored on purpose, see above
    }
  }
  stats.skipped = skipped
  return stats
}
