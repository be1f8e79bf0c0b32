import {entryText as joinEntryText} from '../entry-text.ts'
import {OFFICIAL_META_KEY, type OfficialMeta, type ServerEntry, type ServerJson} from '../types.ts'

/**
 * The columns an entry is read from, in this order, after a statement's own leading columns.
 * Statements return rows as arrays (node:sqlite `setReturnArrays`): no object with named keys per
 * row, and `at` says where the entry's columns start.
 */
export const ENTRY_COLUMNS =
  'sv.server_json, sv.status, sv.published_at, sv.updated_at, sv.is_latest'

export type Row = unknown[]

export function toEntry(row: Row, at: number): ServerEntry {
  return {
    server: JSON.parse(row[at] as string) as ServerJson,
    _meta: {
      [OFFICIAL_META_KEY]: {
        status: row[at + 1] as OfficialMeta['status'],
        publishedAt: row[at + 2] as string,
        updatedAt: row[at + 3] as string,
        isLatest: row[at + 4] === 1,
      },
    },
  }
}

/**
 * The entry as JSON text (../entry-text.ts). Joined here rather than in SQL (`||`, json_quote),
 * which copies the ~1 KB text at every `||`: with rows as arrays, uncached deep pages were ~19%
 * faster end to end (issue 19; the cost of each step of a page is in
 * bench/sqlite-page-cost.bench.ts).
 */
export function entryText(row: Row, at: number): string {
  return joinEntryText(
    row[at] as string,
    row[at + 1] as string,
    row[at + 2] as string,
    row[at + 3] as string,
    row[at + 4] === 1,
  )
}
