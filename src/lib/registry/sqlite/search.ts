import type {StoreConnections} from './connections.ts'

/**
 * Substring search through the trigram index (migration 2, `search_index`), with results identical
 * to a scan with `instr(re.search_text, term)`: the index only narrows the candidates, and every
 * candidate is still checked with that same `instr` in the page query.
 *
 * The index holds `source_versions.search_text` (already lower-cased, see record.ts) with
 * `case_sensitive 1`, so SQLite never folds case itself: its folding differs from JavaScript's
 * `toLowerCase` for some scripts, and only the term's own lower-casing may apply. It keeps no
 * positions (`detail=none`, a third of the size): the candidates are the versions holding every
 * trigram of a tiling of the term (trigrams at 0, 3, 6, … and the last three characters), a
 * superset of those holding the term, which `instr` then settles.
 *
 * Which plan serves a search depends on how many versions may hold the term:
 * - few (≤ INDEX_CANDIDATES, any source or registry): the page is read from those rows, sorted,
 *   whatever its depth;
 * - many: the ordered (name, version) scan with `instr` finds `limit` matches quickly, since they
 *   are frequent, and stops there; reading every candidate would cost more.
 * Terms shorter than 3 characters have no trigram and always scan, bounded by the page size.
 */
export const INDEX_CANDIDATES = 1000

/**
 * The FROM clause of the indexed plan, taking the candidates as a JSON array of
 * `source_versions.id`; they drive the join (CROSS JOIN keeps the order), and a candidate counts
 * only where it is the version the registry shows (`re.entry_id`).
 */
export const FROM_CANDIDATES =
  'FROM json_each(?) hit CROSS JOIN source_versions sv ON sv.id = hit.value ' +
  'CROSS JOIN registry_entries re ON re.name = sv.name AND re.version = sv.version AND re.entry_id = sv.id '

/** The trigrams that tile `term` (code points, as the tokenizer counts them); none below 3. */
export function tiling(term: string): string[] {
  const chars = [...term]
  const out = new Set<string>()
  for (let i = 0; i + 3 <= chars.length; i += 3) out.add(chars.slice(i, i + 3).join(''))
  if (chars.length >= 3 && chars.length % 3 !== 0) out.add(chars.slice(-3).join(''))
  return [...out]
}

/** An FTS5 query requiring every trigram: each one quoted (quotes doubled), never FTS syntax. */
export function allOf(trigrams: string[]): string {
  return trigrams.map((t) => `"${t.replaceAll('"', '""')}"`).join(' AND ')
}

/**
 * The ids of the versions that may hold `term` (already lower-cased), as a JSON array for
 * FROM_CANDIDATES, or undefined when the scan should serve it (no trigram, or too many).
 */
export function searchCandidates(c: StoreConnections, term: string): string | undefined {
  const trigrams = tiling(term)
  if (trigrams.length === 0) return undefined
  const ids = c
    .stmt(
      'search_candidates',
      'SELECT rowid AS id FROM search_index WHERE search_index MATCH ? LIMIT ?',
    )
    .all(allOf(trigrams), INDEX_CANDIDATES + 1)
  if (ids.length > INDEX_CANDIDATES) return undefined
  return JSON.stringify(ids.map((r) => r.id))
}

// Pages written per merge step: small steps keep each pause short during a sync.
const MERGE_PAGES = 200
const MAX_MERGE_STEPS = 100_000

/**
 * Merges the index's segments into one, a step at a time with `pause` between steps, inside the
 * sync's write transaction. A sync leaves many small segments, and a query reads every segment: on
 * 100,000 versions merging took candidate lookups from ~260 µs to ~175 µs.
 */
export async function mergeSearchIndex(
  c: StoreConnections,
  pause: () => Promise<void>,
): Promise<void> {
  // A negative page count merges any segments, not only those of one level (an incremental
  // 'optimize'); a step that changes fewer than 2 rows had nothing left to merge (FTS5 docs).
  const merge = c.wstmt(
    'search_merge',
    "INSERT INTO search_index (search_index, rank) VALUES ('merge', ?)",
  )
  const total = c.wstmt('total_changes', 'SELECT total_changes() AS n')
  for (let step = 0; step < MAX_MERGE_STEPS; step++) {
    const before = Number(total.get()?.n)
    merge.run(-MERGE_PAGES)
    if (Number(total.get()?.n) - before < 2) return
    await pause()
  }
}
