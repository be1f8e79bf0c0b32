import {ToolgateError} from '../../errors.ts'
import {decodeCursor, encodeCursor} from '../cursor.ts'
import {entryText} from '../entry-text.ts'
import {OFFICIAL_META_KEY, type ListQuery, type OfficialMeta, type ServerEntry} from '../types.ts'

/**
 * The PostgreSQL store's read queries: the same shapes and the same answers as the SQLite store's
 * (../sqlite/query.ts). A page is `WHERE (name, version) > cursor ORDER BY name, version LIMIT
 * n+1` on the primary key of `registry_entries` (keyset, no OFFSET); names and versions are
 * `COLLATE "C"` so the order is SQLite's byte order. Each page is one statement, hence one
 * snapshot: a page never mixes data from before and after a sync.
 */
export interface EntryRow {
  page_name: string
  page_version: string
  server_json: string
  status: string
  published_at: string
  updated_at: string
  is_latest: boolean
}

export type Query = (text: string, params: unknown[]) => Promise<EntryRow[]>

const COLUMNS =
  'SELECT re.name AS page_name, re.version AS page_version, sv.server_json, sv.status, ' +
  'sv.published_at, sv.updated_at, sv.is_latest ' +
  'FROM registry_entries re JOIN source_versions sv ON sv.id = re.entry_id '

// Below this many characters pg_trgm extracts no trigram, so the LIKE would only make the planner
// scan the whole GIN index; strpos alone then filters the range scan.
const TRIGRAM = 3

/** `%`, `_` and the escape character itself are literal in the LIKE pattern. */
function likePattern(term: string): string {
  return `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

// PostgreSQL text cannot hold U+0000; stored search text has it removed (see sync.ts).
export const withoutNul = (s: string) => s.replaceAll('\u0000', '')

export interface Page {
  rows: EntryRow[]
  next: string | undefined
}

/** One page in (name, version) order and the cursor of the next page when there is one. */
export async function selectPage(
  q: Query,
  registry: string,
  query: ListQuery,
  maxLimit = 100,
): Promise<Page> {
  const after = query.cursor !== undefined ? decodeCursor(query.cursor) : undefined
  if (after && after.version.includes('\u0000')) {
    throw new ToolgateError('ERR_BAD_PARAMETER', 'cursor: not a cursor returned by this server', {
      details: {parameter: 'cursor'},
    })
  }
  const latest = query.version === 'latest'
  const exactVersion = query.version !== undefined && !latest ? query.version : undefined
  const search = query.search ? withoutNul(query.search.toLowerCase()) : undefined
  const updatedSince = query.updatedSince?.getTime()
  if (updatedSince !== undefined && Number.isNaN(updatedSince)) {
    throw new ToolgateError('ERR_BAD_PARAMETER', 'updated_since: not a valid date-time')
  }
  const limit = Math.max(1, Math.min(maxLimit, Math.floor(query.limit)))
  const params: unknown[] = [registry]
  const p = (value: unknown) => {
    params.push(value)
    return `$${params.length}`
  }
  const where = ['re.registry = $1']
  if (after) {
    // Row comparison: an index range scan on the primary key from the cursor on.
    where.push(`(re.name, re.version) > (${p(after.name)}, ${p(after.version)})`)
  }
  if (latest) where.push('re.is_latest')
  else if (exactVersion !== undefined) where.push(`re.version = ${p(exactVersion)}`)
  if (query.traits) {
    const mask = p(query.traits)
    where.push(`(re.traits & ${mask}) = ${mask}`)
  }
  if (updatedSince !== undefined) where.push(`re.updated_ms > ${p(updatedSince)}`)
  if (search) {
    // strpos is the SQLite store's instr(): a plain substring, the term is never a pattern. The
    // LIKE adds nothing to the answer, only lets pg_trgm's GIN index find the candidates.
    where.push(`strpos(re.search_text, ${p(search)}) > 0`)
    if ([...search].length >= TRIGRAM) where.push(`re.search_text LIKE ${p(likePattern(search))}`)
  }
  const text =
    COLUMNS + `WHERE ${where.join(' AND ')} ORDER BY re.name, re.version LIMIT ${p(limit + 1)}`
  const rows = await q(text, params)
  const more = rows.length > limit
  if (more) rows.length = limit
  const last = rows[rows.length - 1]
  const next =
    more && last ? encodeCursor({name: last.page_name, version: last.page_version}) : undefined
  return {rows, next}
}

export function selectVersions(q: Query, registry: string, name: string): Promise<EntryRow[]> {
  return q(COLUMNS + 'WHERE re.registry = $1 AND re.name = $2 ORDER BY re.version', [
    registry,
    name,
  ])
}

export async function selectVersion(
  q: Query,
  registry: string,
  name: string,
  version: string,
): Promise<EntryRow | undefined> {
  const rows =
    version === 'latest'
      ? await q(COLUMNS + 'WHERE re.registry = $1 AND re.name = $2 AND re.is_latest LIMIT 1', [
          registry,
          name,
        ])
      : await q(COLUMNS + 'WHERE re.registry = $1 AND re.name = $2 AND re.version = $3', [
          registry,
          name,
          version,
        ])
  return rows[0]
}

export function toEntry(row: EntryRow): ServerEntry {
  return {
    server: JSON.parse(row.server_json) as ServerEntry['server'],
    _meta: {
      [OFFICIAL_META_KEY]: {
        status: row.status as OfficialMeta['status'],
        publishedAt: row.published_at,
        updatedAt: row.updated_at,
        isLatest: row.is_latest,
      },
    },
  }
}

/** The entry as JSON text (../entry-text.ts). */
export function toEntryText(row: EntryRow): string {
  return entryText(row.server_json, row.status, row.published_at, row.updated_at, row.is_latest)
}
