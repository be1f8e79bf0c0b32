import {once} from 'node:events'
import type {Writable} from 'node:stream'
import {finished} from 'node:stream/promises'
import type {TransactionSql} from 'postgres'
import {ToolgateError} from '../../errors.ts'
import {pickLatest} from '../latest.ts'
import {syncPhase} from '../sync-phases.ts'
import type {ReplaceSourceOptions, ServerJson, SyncLease, SyncStats} from '../types.ts'
import {stageInWorker, workerStaging, type WorkerStaging} from './stage-worker.ts'
import {stagingChunks} from './staging-rows.ts'

/** Names per isLatest round trip. */
const BATCH = 1000
// Transaction-level advisory lock taken by every write: syncs of two sources feeding one registry
// on two replicas would otherwise both rebuild the same registry rows and collide on its key.
export const WRITE_LOCK_KEY = 0x746f6f6d

export const NOTIFY_CHANNEL = 'toolgate_registry'

/**
 * Replaces what `source` holds with `servers` in one transaction, so readers on every replica see
 * the old set or the new one, never a mix (PostgreSQL MVCC). The same steps as the SQLite store
 * (../sqlite/replace-source.ts), set-based on the server: stage into a temp table, apply the
 * difference (removed, changed, added) collecting the touched names into a second temp table,
 * recompute isLatest for those names (in JS: semver), re-materialise them in every registry the
 * source feeds, bump the store generation and NOTIFY the other replicas (delivered at COMMIT).
 * With a lease, the commit also releases it, and fails (rolling everything back) when another
 * replica took the lease over meanwhile.
 */
export async function replaceSourceTx(
  tx: TransactionSql,
  source: string,
  servers: Iterable<ServerJson>,
  now: Date,
  options: ReplaceSourceOptions,
): Promise<{stats: SyncStats; generation: number | undefined}> {
  const nowIso = now.toISOString()
  const nowMs = now.getTime()
  const stats: SyncStats = {source, versions: 0, added: 0, updated: 0, removed: 0, skipped: 0}
  await tx.unsafe(
    'CREATE TEMP TABLE staging (name TEXT COLLATE "C" NOT NULL, version TEXT COLLATE "C" NOT NULL, ' +
      'server_json TEXT NOT NULL, content_hash TEXT NOT NULL, search_text TEXT NOT NULL, ' +
      'up_status TEXT, up_published TEXT, up_updated TEXT, up_updated_ms BIGINT, up_latest BOOLEAN, ' +
      'traits INTEGER NOT NULL, PRIMARY KEY (name, version)) ON COMMIT DROP; ' +
      'CREATE TEMP TABLE changed (name TEXT COLLATE "C" PRIMARY KEY) ON COMMIT DROP',
  )
  const inWorker = workerStaging(servers)
  syncPhase(source, 'staging', {worker: inWorker !== undefined})
  stats.skipped = await stage(tx, servers, inWorker, options.trustOfficialMeta === true, stats)
  await tx.unsafe('ANALYZE staging')
  syncPhase(source, 'applying')
  await tx`SELECT pg_advisory_xact_lock(${WRITE_LOCK_KEY})`

  const count = async (text: string, params: unknown[]) =>
    Number((await tx.unsafe(text, params as never[]))[0]?.n ?? 0)
  const track = (dml: string) =>
    `WITH d AS (${dml}), c AS (INSERT INTO changed SELECT DISTINCT name FROM d ` +
    'ON CONFLICT DO NOTHING) SELECT count(*) AS n FROM d'
  stats.removed = await count(
    track(
      'DELETE FROM source_versions sv WHERE sv.source = $1 AND NOT EXISTS ' +
        '(SELECT 1 FROM staging s WHERE s.name = sv.name AND s.version = sv.version) RETURNING sv.name',
    ),
    [source],
  )
  // Changed: new content, or different upstream-owned metadata. publishedAt carries over;
  // updatedAt moves only when the document changed (or upstream says). Only content or status
  // changes count as "updated" (as in the SQLite store). Every changed name has its isLatest
  // recomputed: a trusted upstream's flags of the previous sync are not stored, so a name whose
  // flag vanished must be judged again by our rule (as the SQLite store does).
  const changedRows = await tx.unsafe(
    "WITH d AS (SELECT sv.id, sv.name, (sv.content_hash <> s.content_hash OR sv.status <> COALESCE(s.up_status, 'active')) AS counted, " +
      "s.server_json, s.content_hash, COALESCE(s.up_status, 'active') AS status, " +
      'COALESCE(s.up_published, sv.published_at) AS published_at, ' +
      'COALESCE(s.up_updated, CASE WHEN sv.content_hash <> s.content_hash THEN $2 ELSE sv.updated_at END) AS updated_at, ' +
      'COALESCE(s.up_updated_ms, CASE WHEN sv.content_hash <> s.content_hash THEN $3::bigint ELSE sv.updated_ms END) AS updated_ms, ' +
      's.search_text, s.traits FROM staging s JOIN source_versions sv ' +
      'ON sv.source = $1 AND sv.name = s.name AND sv.version = s.version ' +
      "WHERE sv.content_hash <> s.content_hash OR sv.status <> COALESCE(s.up_status, 'active') " +
      'OR (s.up_published IS NOT NULL AND s.up_published <> sv.published_at) ' +
      'OR (s.up_updated IS NOT NULL AND s.up_updated <> sv.updated_at)), ' +
      'u AS (UPDATE source_versions t SET server_json = d.server_json, content_hash = d.content_hash, ' +
      'status = d.status, published_at = d.published_at, updated_at = d.updated_at, ' +
      'updated_ms = d.updated_ms, search_text = d.search_text, traits = d.traits FROM d WHERE t.id = d.id RETURNING d.name, d.counted), ' +
      'c AS (INSERT INTO changed SELECT DISTINCT name FROM u ON CONFLICT DO NOTHING) ' +
      'SELECT count(*) FILTER (WHERE counted) AS n FROM u',
    [source, nowIso, nowMs],
  )
  stats.updated = Number(changedRows[0]?.n ?? 0)
  stats.added = await count(
    track(
      'INSERT INTO source_versions (source, name, version, server_json, content_hash, status, ' +
        'published_at, updated_at, updated_ms, is_latest, search_text, traits) ' +
        "SELECT $1, s.name, s.version, s.server_json, s.content_hash, COALESCE(s.up_status, 'active'), " +
        'COALESCE(s.up_published, $2), COALESCE(s.up_updated, $2), COALESCE(s.up_updated_ms, $3::bigint), false, s.search_text, s.traits ' +
        'FROM staging s WHERE NOT EXISTS (SELECT 1 FROM source_versions sv ' +
        'WHERE sv.source = $1 AND sv.name = s.name AND sv.version = s.version) RETURNING name',
    ),
    [source, nowIso, nowMs],
  )

  let generation: number | undefined
  const touched = await count('SELECT count(*) AS n FROM changed', [])
  if (touched > 0) {
    await tx.unsafe('ANALYZE changed')
    syncPhase(source, 'latest')
    await updateLatest(tx, source)
    syncPhase(source, 'rebuilding')
    await rebuildChanged(tx, source)
    generation = await bumpGeneration(tx)
  }
  if (options.lease) await releaseLeaseOnCommit(tx, source, options.lease)
  return {stats, generation}
}

const STAGING_COLUMNS =
  'name, version, server_json, content_hash, search_text, up_status, up_published, up_updated, ' +
  'up_updated_ms, up_latest, traits'
// A chunk written to the COPY stream ends after a slice of work (preparing records: parse, hash,
// search text) or this many rows: the event loop runs between chunks, so readers wait at most a
// slice. 250 rows took ~15 ms on the 2-core bench machine and readers' p50 rose to that meanwhile.
// A slice is 0.5 ms while the replica is lightly loaded: a request waits for a slice at each of
// its turns of the event loop (its HTTP request, the database's answer), and with 2 ms slices
// open-loop readers' p50 during staging was 11 ms against 1 ms idle; with 0.5 ms it was 4 ms, and
// the staging took as long (3–4 s for 100k). When readers keep the event loop busy between slices,
// a 2 ms slice got ~10% of the process and a 100k staging took 13 s instead of 3: the slice then
// grows to half the time the others just had (the sync gets about a third of the process), capped
// so one slice never holds readers for long.
const COPY_SLICE_MS = 0.5
const COPY_SLICE_MAX_MS = 12
const COPY_CHUNK = 250

/** The next slice: 0.5 ms, or half of what the event loop just spent elsewhere, up to the cap. */
export function nextSliceMs(othersMs: number): number {
  return Math.min(COPY_SLICE_MAX_MS, Math.max(COPY_SLICE_MS, othersMs / 2))
}

/** Writes the staging rows from the event loop, a slice at a time; returns how many were skipped. */
async function stageHere(
  copy: Writable,
  servers: Iterable<ServerJson>,
  trust: boolean,
): Promise<number> {
  const counts = {skipped: 0}
  let sliceStart = performance.now()
  let sliceMs = COPY_SLICE_MS
  const cut = (rows: number) => rows >= COPY_CHUNK || performance.now() - sliceStart >= sliceMs
  for (const chunk of stagingChunks(servers, trust, counts, cut)) {
    if (copy.errored) throw copy.errored
    if (!copy.write(chunk)) await once(copy, 'drain')
    // The socket's write callbacks run as process.nextTick: without this turn of the event
    // loop, the whole COPY ran before any reader was answered (a ~2 s stall at 100,000). What the
    // turn spent on everything else (readers) sizes the next slice; a wait for the COPY stream to
    // drain is not counted: that is the database being slow, not readers.
    const turn = performance.now()
    await new Promise((resolve) => setImmediate(resolve))
    sliceMs = nextSliceMs(performance.now() - turn)
    sliceStart = performance.now()
  }
  return counts.skipped
}

/**
 * Stages the records with one COPY (first occurrence of a name+version wins; the later ones are
 * skipped here, as the staging key would refuse them); returns how many were skipped. COPY streams
 * while PostgreSQL inserts, so preparing records here and inserting them there overlap: 100,000
 * versions stage in ~2 s, against ~7 s with the batched INSERTs of unnest() arrays before. A large
 * local file's records are prepared in a worker thread (./stage-worker.ts), others on the event
 * loop in slices.
 */
async function stage(
  tx: TransactionSql,
  servers: Iterable<ServerJson>,
  inWorker: WorkerStaging | undefined,
  trust: boolean,
  stats: SyncStats,
): Promise<number> {
  let skipped: number
  const copy = await tx.unsafe(`COPY staging (${STAGING_COLUMNS}) FROM STDIN`).writable()
  const ended = finished(copy)
  ended.catch(() => undefined) // awaited below; an earlier throw must not leave it unhandled
  try {
    skipped = inWorker
      ? await stageInWorker(copy, inWorker, trust)
      : await stageHere(copy, servers, trust)
  } catch (err) {
    copy.destroy(err as Error)
    throw err
  }
  copy.end()
  // postgres.js 3.4 never settles the stream when the server refuses the COPY after its end (a
  // failing row, statement_timeout, a cancelled backend; porsager/postgres#1173): awaiting `ended`
  // alone would hang the sync on its connection. The next statement answers either way: the
  // staged count once the COPY is in, or an error as the transaction is aborted.
  let staged: number
  try {
    staged = Number((await tx.unsafe('SELECT count(*) AS n FROM staging'))[0]?.n)
  } catch (err) {
    if ((err as {code?: unknown}).code !== '25P02') throw err
    throw new ToolgateError(
      'ERR_STORAGE',
      'storage: the database refused the staged records (COPY); its log says why',
      {cause: err},
    )
  }
  await ended
  stats.versions += staged
  return skipped
}

interface LatestRow {
  id: number
  name: string
  version: string
  published_at: string
  is_latest: boolean
  up_latest: boolean | null
}

/**
 * isLatest for every changed name, BATCH names at a time. A batch's names and versions come in one
 * query (they took two before), and its UPDATE is sent without waiting, so it travels with the
 * next batch's read. Both are prepared statements: postgres.js describes an unprepared statement
 * with parameters in a round trip of its own first, and sends nothing after it until its answer,
 * which made every step wait for the one before. Three awaited queries per batch made this step
 * ~4 s of a saturated 100,000-version sync (each answer also waits for a turn of a busy event
 * loop).
 */
async function updateLatest(tx: TransactionSql, source: string): Promise<void> {
  let after = ''
  let pending: Promise<unknown> | undefined
  try {
    for (;;) {
      // Every name of the batch comes back, one with no version left (all removed) as a row of
      // NULLs, so the batch's last name is known whatever it holds.
      const rows = (await tx.unsafe(
        'WITH b AS (SELECT name FROM changed WHERE name > $2 ORDER BY name LIMIT $3) ' +
          'SELECT b.name AS batch_name, sv.id, sv.name, sv.version, sv.published_at, sv.is_latest, ' +
          's.up_latest FROM b LEFT JOIN source_versions sv ON sv.source = $1 AND sv.name = b.name ' +
          'LEFT JOIN staging s ON s.name = sv.name AND s.version = sv.version ORDER BY b.name',
        [source, after, BATCH],
        {prepare: true},
      )) as unknown as BatchRow[]
      // The previous batch's UPDATE was queued before this read on the same connection, so it
      // has its answer by now. If it failed, this read failed too (the transaction is aborted)
      // and the finally below throws the UPDATE's own error instead.
      await pending
      pending = undefined
      if (rows.length === 0) return
      after = rows[rows.length - 1]!.batch_name
      const {ids, flags} = latestChanges(
        rows.filter((r): r is LatestRow & BatchRow => r.id !== null),
      )
      if (ids.length > 0) {
        pending = tx.unsafe(
          'UPDATE source_versions sv SET is_latest = u.flag FROM unnest($1::bigint[], $2::boolean[]) ' +
            'AS u(id, flag) WHERE sv.id = u.id',
          [tx.array(ids, 20), tx.array(flags, 16)] as never[],
          {prepare: true},
        )
        // Awaited after the next read (or in finally); never left unhandled meanwhile.
        pending.catch(() => undefined)
      }
    }
  } finally {
    await pending
  }
}

/** A row of a batch: a version of one of its names, or NULLs for a name with none left. */
type BatchRow = {batch_name: string} & (LatestRow | {[K in keyof LatestRow]: null})

/** The (id, flag) pairs whose isLatest differs from the rule, for rows ordered by name. */
function latestChanges(rows: LatestRow[]): {ids: number[]; flags: boolean[]} {
  const ids: number[] = []
  const flags: boolean[] = []
  let group: LatestRow[] = []
  const decide = () => {
    const best = chooseLatest(group)
    for (const v of group) {
      const want = v === best
      if (v.is_latest !== want) {
        ids.push(v.id)
        flags.push(want)
      }
    }
    group = []
  }
  for (const r of rows) {
    if (group.length > 0 && group[0]!.name !== r.name) decide()
    group.push(r)
  }
  if (group.length > 0) decide()
  return {ids, flags}
}

function chooseLatest(group: LatestRow[]): LatestRow | undefined {
  // A trusted upstream that flags exactly one version of the name is believed; otherwise our rule.
  if (group.every((v) => v.up_latest !== null)) {
    const flagged = group.filter((v) => v.up_latest === true)
    if (flagged.length === 1) return flagged[0]
  }
  return pickLatest(group.map((v) => ({version: v.version, publishedAt: v.published_at, v})))?.v
}

/**
 * A registry's effective rows for the names in `changed`, or for every name (`all`): a name present
 * in several sources of a registry is served, with all its versions, from the first listed.
 */
export function rebuildSql(names: 'changed' | 'all'): string {
  const filter = names === 'changed' ? ' AND sv.name IN (SELECT name FROM changed)' : ''
  return (
    'INSERT INTO registry_entries (registry, name, version, entry_id, updated_ms, is_latest, search_text, traits) ' +
    'SELECT registry, name, version, id, updated_ms, is_latest, search_text, traits FROM (' +
    '  SELECT rs.registry, sv.name, sv.version, sv.id, sv.updated_ms, sv.is_latest, sv.search_text, sv.traits, ' +
    '    rs.position, MIN(rs.position) OVER (PARTITION BY sv.name) AS best ' +
    '  FROM source_versions sv JOIN registry_sources rs ON rs.source = sv.source ' +
    `  WHERE rs.registry = $1${filter}) x WHERE position = best`
  )
}

async function rebuildChanged(tx: TransactionSql, source: string): Promise<void> {
  const registries = await tx.unsafe(
    'SELECT DISTINCT registry FROM registry_sources WHERE source = $1',
    [source],
  )
  for (const {registry} of registries) {
    await tx.unsafe(
      'DELETE FROM registry_entries WHERE registry = $1 AND name IN (SELECT name FROM changed)',
      [registry],
    )
    await tx.unsafe(rebuildSql('changed'), [registry])
  }
}

/** Counts a committed change; the NOTIFY reaches the other replicas when the transaction commits. */
export async function bumpGeneration(tx: TransactionSql): Promise<number> {
  const rows = await tx.unsafe(
    'UPDATE store_state SET generation = generation + 1 WHERE id = 1 RETURNING generation',
  )
  const generation = Number(rows[0]?.generation)
  await tx`SELECT pg_notify(${NOTIFY_CHANNEL}, ${String(generation)})`
  return generation
}

async function releaseLeaseOnCommit(
  tx: TransactionSql,
  source: string,
  lease: SyncLease,
): Promise<void> {
  const rows = await tx.unsafe(
    'UPDATE source_sync SET lease_holder = NULL, lease_expires_at = NULL, ' +
      'last_success_at = now(), syncs = syncs + 1 ' +
      'WHERE source = $1 AND lease_holder = $2 AND lease_token = $3 RETURNING source',
    [source, lease.holder, lease.token],
  )
  if (rows.length === 0) {
    throw new ToolgateError(
      'ERR_STORAGE',
      `storage: the sync lease of source "${source}" expired and another replica took it over; this sync is discarded`,
    )
  }
}
