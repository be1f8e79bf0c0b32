import type {SQLInputValue} from 'node:sqlite'
import type {SyncStats} from '../types.ts'
import {BATCH, type StoreConnections} from './connections.ts'

// The columns of a diff_updated row that sv_upd writes, in its parameter order.
const UPDATED_COLUMNS = [
  'server_json',
  'content_hash',
  'status',
  'published_at',
  'updated_at',
  'updated_ms',
  'search_text',
  'traits',
  'id',
] as const

/**
 * Step 2 of a sync, inside its write transaction: the difference between what `source` holds and
 * what temp.staging holds is applied BATCH rows at a time (removed, changed, added versions),
 * yielding through `pause`. New and changed versions are stamped `nowIso`/`nowMs`. Counts into `stats` and reports each touched name to `changed`.
 */
export async function applyDiff(
  c: StoreConnections,
  source: string,
  nowIso: string,
  nowMs: number,
  stats: SyncStats,
  changed: (name: unknown) => void,
  pause: () => Promise<void>,
): Promise<void> {
  const stagedMax = Number(
    c.wstmt('stg_max', 'SELECT COALESCE(MAX(rowid), 0) AS m FROM temp.staging').get()?.m ?? 0,
  )
  const ids = c
    .wstmt(
      'sv_id_span',
      'SELECT COALESCE(MIN(id), 0) AS lo, COALESCE(MAX(id), -1) AS hi FROM source_versions WHERE source = ?',
    )
    .get(source)
  const idHi = Number(ids?.hi ?? -1)

  // Removed versions: what the source held and no longer lists (windows of the id space).
  const removed = c.wstmt(
    'diff_removed',
    'SELECT id, name FROM source_versions sv WHERE sv.id >= ? AND sv.id < ? AND sv.source = ? ' +
      'AND NOT EXISTS (SELECT 1 FROM temp.staging s WHERE s.name = sv.name AND s.version = sv.version)',
  )
  const del = c.wstmt('sv_del', 'DELETE FROM source_versions WHERE id = ?')
  for (let lo = Number(ids?.lo ?? 0); lo <= idHi; lo += BATCH) {
    for (const row of removed.all(lo, lo + BATCH, source)) {
      del.run(Number(row.id))
      stats.removed++
      changed(row.name)
    }
    await pause()
  }

  const inChunk = 's.rowid > ? AND s.rowid <= ?'
  const differs =
    "(sv.content_hash <> s.content_hash OR sv.status <> COALESCE(s.up_status, 'active') " +
    'OR (s.up_published IS NOT NULL AND s.up_published <> sv.published_at) ' +
    'OR (s.up_updated IS NOT NULL AND s.up_updated <> sv.updated_at))'
  // Changed versions: new content, or different upstream-owned metadata. publishedAt carries
  // over; updatedAt moves only when the document changed (or upstream says). CROSS JOIN keeps
  // the chunk of staging as the outer loop (else SQLite walks the whole source per chunk).
  const updatedRows = c.wstmt(
    'diff_updated',
    'SELECT sv.id AS id, sv.name AS name, (sv.content_hash <> s.content_hash OR ' +
      "sv.status <> COALESCE(s.up_status, 'active')) AS counted, " +
      "s.server_json AS server_json, s.content_hash AS content_hash, COALESCE(s.up_status, 'active') AS status, " +
      'COALESCE(s.up_published, sv.published_at) AS published_at, ' +
      'COALESCE(s.up_updated, CASE WHEN sv.content_hash <> s.content_hash THEN ? ELSE sv.updated_at END) AS updated_at, ' +
      'COALESCE(s.up_updated_ms, CASE WHEN sv.content_hash <> s.content_hash THEN ? ELSE sv.updated_ms END) AS updated_ms, ' +
      's.search_text AS search_text, s.traits AS traits ' +
      'FROM temp.staging s CROSS JOIN source_versions sv ' +
      'ON sv.source = ? AND sv.name = s.name AND sv.version = s.version ' +
      `WHERE ${inChunk} AND ${differs}`,
  )
  const update = c.wstmt(
    'sv_upd',
    'UPDATE source_versions SET server_json = ?, content_hash = ?, status = ?, published_at = ?, ' +
      'updated_at = ?, updated_ms = ?, search_text = ?, traits = ? WHERE id = ?',
  )
  const newNotIn =
    'NOT EXISTS (SELECT 1 FROM source_versions sv WHERE sv.source = ? AND sv.name = s.name AND sv.version = s.version)'
  const addedRows = c.wstmt(
    'diff_added',
    `SELECT s.name AS name FROM temp.staging s WHERE ${inChunk} AND ${newNotIn}`,
  )
  const add = c.wstmt(
    'sv_add',
    'INSERT INTO source_versions (source, name, version, server_json, content_hash, status, ' +
      'published_at, updated_at, updated_ms, is_latest, search_text, traits) ' +
      "SELECT ?, s.name, s.version, s.server_json, s.content_hash, COALESCE(s.up_status, 'active'), " +
      'COALESCE(s.up_published, ?), COALESCE(s.up_updated, ?), COALESCE(s.up_updated_ms, ?), 0, s.search_text, s.traits ' +
      `FROM temp.staging s WHERE ${inChunk} AND ${newNotIn}`,
  )
  for (let lo = 0; lo < stagedMax; lo += BATCH) {
    const hi = lo + BATCH
    for (const row of updatedRows.all(nowIso, nowMs, source, lo, hi)) {
      if (Number(row.counted) === 1) stats.updated++
      changed(row.name)
      update.run(...UPDATED_COLUMNS.map((col) => row[col] as SQLInputValue))
    }
    for (const row of addedRows.iterate(lo, hi, source)) {
      stats.added++
      changed(row.name)
    }
    add.run(source, nowIso, nowIso, nowMs, lo, hi, source)
    await pause()
  }
}
