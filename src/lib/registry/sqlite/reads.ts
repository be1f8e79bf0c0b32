import type {ListQuery, ListResult, ServerEntry} from '../types.ts'
import type {StoreConnections} from './connections.ts'
import {ENTRY_COLUMNS, entryText, toEntry} from './entry-columns.ts'
import {FROM_INDEX, selectPage, selectVersion, selectVersions} from './query.ts'

/**
 * The store's reads, each in two forms: entry objects, and entry JSON text assembled without
 * parsing (byte-identical to `JSON.stringify` of the objects; see entry-columns.ts). A page row
 * is its position (name, version) then the entry's columns, which start at index 2.
 */
const PAGE_AT = 2

export function listServers(c: StoreConnections, registry: string, query: ListQuery): ListResult {
  const page = selectPage(c, registry, query, 'list', ENTRY_COLUMNS)
  const result: ListResult = {servers: page.rows.map((r) => toEntry(r, PAGE_AT))}
  if (page.next) result.nextCursor = page.next
  return result
}

export function listServersText(
  c: StoreConnections,
  registry: string,
  query: ListQuery,
): {servers: string[]; nextCursor?: string} {
  const page = selectPage(c, registry, query, 'list_text', ENTRY_COLUMNS)
  const result: {servers: string[]; nextCursor?: string} = {
    servers: page.rows.map((r) => entryText(r, PAGE_AT)),
  }
  if (page.next) result.nextCursor = page.next
  return result
}

export function listVersions(
  c: StoreConnections,
  registry: string,
  name: string,
): ServerEntry[] | undefined {
  const rows = selectVersions(c, registry, name, 'versions', ENTRY_COLUMNS)
  return rows.length === 0 ? undefined : rows.map((r) => toEntry(r, 0))
}

export function listVersionsText(
  c: StoreConnections,
  registry: string,
  name: string,
): string[] | undefined {
  const rows = selectVersions(c, registry, name, 'versions_text', ENTRY_COLUMNS)
  return rows.length === 0 ? undefined : rows.map((r) => entryText(r, 0))
}

export function getVersion(
  c: StoreConnections,
  registry: string,
  name: string,
  version: string,
): ServerEntry | undefined {
  const row = selectVersion(c, registry, name, version, 'get', ENTRY_COLUMNS)
  return row ? toEntry(row, 0) : undefined
}

export function getVersionText(
  c: StoreConnections,
  registry: string,
  name: string,
  version: string,
): string | undefined {
  const row = selectVersion(c, registry, name, version, 'get_text', ENTRY_COLUMNS)
  return row ? entryText(row, 0) : undefined
}

/** One scanned row of a filtered list: its position, and its entry text on demand. */
export interface ScannedRow {
  name: string
  version: string
  /** Undefined when the row was removed since the scan (a sync by another process). */
  entry(): string | undefined
}

/** Largest batch a filtered list scans at once (see registry-api/filtered-answer.ts). */
export const MAX_SCAN_BATCH = 2048

/**
 * Up to `query.limit` positions (at most MAX_SCAN_BATCH) from `query.cursor` on, and whether more
 * follow: the building block of a list filtered by policy, which scans past hidden rows and makes
 * its own cursors from the rows it shows. The scan reads the primary-key index only; an entry's
 * text (~1 KB) is read when asked for, for rows the policy must see or the page shows.
 */
export function scanServers(
  c: StoreConnections,
  registry: string,
  query: ListQuery,
): {rows: ScannedRow[]; more: boolean} {
  const page = selectPage(
    c,
    registry,
    query,
    'scan',
    're.entry_id AS entry_id',
    MAX_SCAN_BATCH,
    FROM_INDEX,
  )
  const byId = c.arrayStmt(
    'entry_by_id',
    `SELECT ${ENTRY_COLUMNS} FROM source_versions sv WHERE sv.id = ?`,
  )
  return {
    rows: page.rows.map((r) => ({
      name: r[0] as string,
      version: r[1] as string,
      entry: () => {
        const row = byId.get(r[PAGE_AT] as number) as unknown as unknown[] | undefined
        return row ? entryText(row, 0) : undefined
      },
    })),
    more: page.next !== undefined,
  }
}
