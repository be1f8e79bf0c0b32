import {checkRecord, prepareRecord} from '../record.ts'
import type {ServerJson} from '../types.ts'
import {copyRow} from './copy-text.ts'
import {withoutNul} from './reads.ts'

// A bound on a chunk whatever its row count: 256 rows of 400 KB records made one chunk longer than
// a string may be.
export const CHUNK_MAX_CHARS = 1024 * 1024

/**
 * The rows of the `staging` table in COPY text, in chunks: each record prepared (parse, hash,
 * search text) and the first occurrence of a name+version kept, the later ones counted in
 * `counts.skipped` (the staging key would refuse them). A chunk ends once it holds
 * CHUNK_MAX_CHARS, or where `cut(rows)` says after a row. The same code runs on the event loop
 * (in slices, see sync.ts) and in the staging worker (./stage-worker.ts).
 */
export function* stagingChunks(
  servers: Iterable<ServerJson>,
  trust: boolean,
  counts: {skipped: number},
  cut: (rows: number) => boolean,
): Generator<string> {
  const seen = new Set<string>()
  let rows: string[] = []
  let chars = 0
  for (const server of servers) {
    if (checkRecord(server) !== undefined) {
      counts.skipped++
      continue
    }
    const rec = prepareRecord(server, trust)
    // Names and versions hold no control characters (record.ts), so NUL separates them; lone
    // surrogates become U+FFFD as in the UTF-8 the server receives, where they would collide.
    const key = `${rec.name.toWellFormed()}\0${rec.version.toWellFormed()}`
    if (seen.has(key)) {
      counts.skipped++
      continue
    }
    seen.add(key)
    const up = rec.official
    const row = copyRow([
      rec.name,
      rec.version,
      rec.json,
      rec.hash,
      withoutNul(rec.searchText),
      up?.status ?? null,
      up?.publishedAt ?? null,
      up?.updatedAt ?? null,
      up?.updatedAt ? Date.parse(up.updatedAt) : null,
      up?.isLatest ?? null,
      rec.traits,
    ])
    rows.push(row)
    chars += row.length
    if (chars >= CHUNK_MAX_CHARS || cut(rows.length)) {
      yield rows.join('')
      rows = []
      chars = 0
    }
  }
  if (rows.length > 0) yield rows.join('')
}
