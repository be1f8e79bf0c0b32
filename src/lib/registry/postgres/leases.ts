import type {Sql} from 'postgres'
import type {SyncClaim, SyncLease} from '../types.ts'

/**
 * Sync coordination between replicas (contract §1 "Scale-out"): a row per source in `source_sync`
 * holds a lease (holder, fencing token, expiry) and the last start and success. A replica syncs a
 * source only after winning the lease with one conditional UPDATE, so each source is synced by one
 * replica at a time; the lease is renewed while the sync runs and released by the sync's own commit
 * (sync.ts), so a replica killed mid-sync blocks the others only until its lease expires. Times
 * are the database's (`now()`), so replicas' clocks do not matter.
 */

// A sync is due when the last one started at least this much less than an interval ago: timers of
// different replicas fire at different phases, and a replica whose timer fires a hair early must
// still find the source due, or syncs would drift to one every two intervals.
export function dueAfterMs(intervalMs: number): number {
  return intervalMs - Math.min(intervalMs / 10, 2000)
}

/**
 * Claims the sync of `source` for `holder`: claimed, busy (another replica's lease is live) or
 * fresh (synced less than an interval ago). A live lease in `holder`'s own name is claimed again
 * with a new token: a replica claims a source only while it is not syncing it (its syncs of one
 * source are serialised), so such a lease is one whose answer it never got (a claim that went past
 * the store's deadline and committed anyway). The new token fences the lost one out; without this
 * the replica would wait out its own lease, 60 s by default, and skip an interval.
 */
export async function claimLease(
  sql: Sql,
  holder: string,
  source: string,
  leaseMs: number,
  intervalMs: number | undefined,
  force: boolean,
): Promise<SyncClaim> {
  await sql`INSERT INTO source_sync (source) VALUES (${source}) ON CONFLICT DO NOTHING`
  const due = force || intervalMs === undefined ? 0 : dueAfterMs(intervalMs)
  const won = await sql<{lease_token: number}[]>`
    UPDATE source_sync SET lease_holder = ${holder}, lease_token = lease_token + 1,
      lease_expires_at = now() + ${leaseMs} * interval '1 millisecond', last_started_at = now()
    WHERE source = ${source}
      AND (lease_holder = ${holder}
           OR ((lease_holder IS NULL OR lease_expires_at < now())
               AND (${force} OR last_success_at IS NULL OR last_started_at IS NULL
                    OR last_started_at <= now() - ${due} * interval '1 millisecond')))
    RETURNING lease_token`
  if (won[0]) return {kind: 'claimed', lease: {holder, token: Number(won[0].lease_token)}}
  const [row] = await sql<{live: boolean; holder: string | null; last_success_at: Date | null}[]>`
    SELECT lease_holder IS NOT NULL AND lease_expires_at >= now() AS live,
      lease_holder AS holder, last_success_at FROM source_sync WHERE source = ${source}`
  if (row?.live) return {kind: 'busy', holder: row.holder ?? ''}
  return {kind: 'fresh', lastSuccessAt: row?.last_success_at ?? undefined}
}

/** Extends a held lease; false when it was lost (expired and taken over). */
export async function renewLease(
  sql: Sql,
  source: string,
  lease: SyncLease,
  leaseMs: number,
): Promise<boolean> {
  const rows = await sql`
    UPDATE source_sync SET lease_expires_at = now() + ${leaseMs} * interval '1 millisecond'
    WHERE source = ${source} AND lease_holder = ${lease.holder} AND lease_token = ${lease.token}
    RETURNING source`
  return rows.length > 0
}

/** Gives a lease back after a failed sync, so the next due replica can try. */
export async function abandonLease(sql: Sql, source: string, lease: SyncLease): Promise<void> {
  await sql`
    UPDATE source_sync SET lease_holder = NULL, lease_expires_at = NULL
    WHERE source = ${source} AND lease_holder = ${lease.holder} AND lease_token = ${lease.token}`
}

export interface SourceSyncRow {
  source: string
  holder: string | undefined
  lastSuccessAt: Date | undefined
  syncs: number
}

export async function syncRows(sql: Sql): Promise<SourceSyncRow[]> {
  const rows = await sql<
    {source: string; holder: string | null; last_success_at: Date | null; syncs: number}[]
  >`SELECT source, CASE WHEN lease_expires_at >= now() THEN lease_holder END AS holder,
      last_success_at, syncs FROM source_sync ORDER BY source`
  return rows.map((r) => ({
    source: r.source,
    holder: r.holder ?? undefined,
    lastSuccessAt: r.last_success_at ?? undefined,
    syncs: Number(r.syncs),
  }))
}
