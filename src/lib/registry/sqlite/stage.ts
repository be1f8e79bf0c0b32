import {checkRecord, prepareRecord} from '../record.ts'
import type {ServerJson, SyncStats} from '../types.ts'
import {BATCH, type StoreConnections} from './connections.ts'

/**
 * Step 1 of a sync: the incoming records are staged BATCH at a time into the writers' per-connection
 * temp table (one short temp-only transaction per batch), yielding between batches; nothing visible
 * to readers changes. Counts staged versions into `stats.versions`; returns how many records were
 * skipped (invalid, or a name+version already staged: the first occurrence wins).
 */
export async function stageRecords(
  c: StoreConnections,
  servers: Iterable<ServerJson>,
  trust: boolean,
  stats: SyncStats,
): Promise<number> {
  const w = c.writer()
  let skipped = 0
  const stage = c.wstmt(
    'stg_ins',
    'INSERT OR IGNORE INTO temp.staging (name, version, server_json, content_hash, search_text, ' +
      'up_status, up_published, up_updated, up_updated_ms, up_latest, traits) ' +
      'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  )
  const it = servers[Symbol.iterator]()
  let done = false
  try {
    while (!done) {
      w.exec('BEGIN')
      try {
        for (let i = 0; i < BATCH; i++) {
          const next = it.next()
          if (next.done) {
            done = true
            break
          }
          const server = next.value
          if (checkRecord(server) !== undefined) {
            skipped++
            continue
          }
          const rec = prepareRecord(server, trust)
          const up = rec.official
          const r = stage.run(
            rec.name,
            rec.version,
            rec.json,
            rec.hash,
            rec.searchText,
            up?.status ?? null,
            up?.publishedAt ?? null,
            up?.updatedAt ?? null,
            up?.updatedAt ? Date.parse(up.updatedAt) : null,
            up?.isLatest === undefined ? null : up.isLatest ? 1 : 0,
            rec.traits,
          )
          // First occurrence wins; a source listing one version twice is a data error upstream.
          if (r.changes === 0) skipped++
          else stats.versions++
        }
        w.exec('COMMIT')
      } catch (err) {
        w.exec('ROLLBACK')
        throw err
      }
      if (!done) await c.pause()
    }
  } finally {
    if (!done) it.return?.()
  }
  return skipped
}
