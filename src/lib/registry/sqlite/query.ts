import {ToolgateError} from '../../errors.ts'
import {decodeCursor, encodeCursor} from '../cursor.ts'
import type {ListQuery} from '../types.ts'
import type {StoreConnections} from './connections.ts'
import type {Row} from './entry-columns.ts'
import {FROM_CANDIDATES, searchCandidates} from './search.ts'

/**
 * Read queries over `registry_entries`, for any column list (`kind` names the column list in the
 * statement cache). A page is `WHERE (name, version) > cursor ORDER BY name, version LIMIT n+1`:
 * an index range scan costing the same at any depth (keyset pagination, no OFFSET).
 */
const FROM = 'FROM registry_entries re JOIN source_versions sv ON sv.id = re.entry_id '
/** The index alone, for scans that read positions and fetch entries later (filtered lists). */
export const FROM_INDEX = 'FROM registry_entries re '

/** A page's rows: each the name and version of its position (0, 1), then the asked-for columns. */
export interface Page {
  rows: Row[]
  next: string | undefined
}

/** A list page's statement: its cache key (one per query shape), SQL and parameters. */
interface PageStatement {
  key: string
  sql: string
  params: (string | number)[]
  limit: number
}

/** One page in (name, version) order and the cursor of the next page when there is one. */
export function selectPage(
  c: StoreConnections,
  registry: string,
  query: ListQuery,
  kind: string,
  columns: string,
  maxLimit = 100,
  from = FROM,
): Page {
  const {key, sql, params, limit} = pageStatement(c, registry, query, kind, columns, maxLimit, from)
  const rows = c.arrayStmt(key, sql).all(...params) as unknown as Row[]
  const more = rows.length > limit
  if (more) rows.length = limit
  const last = rows[rows.length - 1]
  const next =
    more && last ? encodeCursor({name: String(last[0]), version: String(last[1])}) : undefined
  return {rows, next}
}

function pageStatement(
  c: StoreConnections,
  registry: string,
  query: ListQuery,
  kind: string,
  columns: string,
  maxLimit: number,
  from: string,
): PageStatement {
  requireRegistry(c, registry)
  const after = query.cursor !== undefined ? decodeCursor(query.cursor) : undefined
  const latest = query.version === 'latest'
  const exactVersion = query.version !== undefined && !latest ? query.version : undefined
  const search = query.search ? query.search.toLowerCase() : undefined
  const updatedSince = query.updatedSince?.getTime()
  if (updatedSince !== undefined && Number.isNaN(updatedSince)) {
    throw new ToolgateError('ERR_BAD_PARAMETER', 'updated_since: not a valid date-time')
  }
  const limit = Math.max(1, Math.min(maxLimit, Math.floor(query.limit)))

  const where = ['re.registry = ?']
  const params: (string | number)[] = [registry]
  // Which optional conditions are present: one prepared statement per shape.
  let shape = ''
  if (after) {
    // Keyset: (name, version) > (after.name, after.version). `name >= ?` bounds the range scan;
    // the OR only filters the versions of the cursor's own name.
    where.push('re.name >= ?', '(re.name > ? OR re.version > ?)')
    params.push(after.name, after.name, after.version)
    shape += 'c'
  }
  if (latest) {
    where.push('re.is_latest = 1')
    shape += 'l'
  } else if (exactVersion !== undefined) {
    where.push('re.version = ?')
    params.push(exactVersion)
    shape += 'v'
  }
  if (query.traits) {
    // Every asked-for trait: the bits are read from the row the scan is on (traits.ts).
    where.push('(re.traits & ?) = ?')
    params.push(query.traits, query.traits)
    shape += 't'
  }
  if (updatedSince !== undefined) {
    where.push('re.updated_ms > ?')
    params.push(updatedSince)
    shape += 'u'
  }
  let source = from
  if (search) {
    // instr() rather than LIKE: no wildcard escaping, and user text is never a pattern. It also
    // checks every candidate of the index, which only narrows them (search.ts).
    where.push('instr(re.search_text, ?) > 0')
    params.push(search)
    shape += 's'
    const candidates = searchCandidates(c, search)
    if (candidates !== undefined) {
      // The candidates are FROM's parameter, which comes before every WHERE parameter.
      params.unshift(candidates)
      source = FROM_CANDIDATES
      shape += 'i'
    }
  }
  params.push(limit + 1)
  return {
    key: `${kind}_${shape}`,
    sql:
      `SELECT re.name, re.version, ${columns} ` +
      source +
      `WHERE ${where.join(' AND ')} ORDER BY re.name, re.version LIMIT ?`,
    params,
    limit,
  }
}

/** Every version of one name, in version order. */
export function selectVersions(
  c: StoreConnections,
  registry: string,
  name: string,
  kind: string,
  columns: string,
): Row[] {
  requireRegistry(c, registry)
  return c
    .arrayStmt(
      kind,
      `SELECT ${columns} ${FROM}WHERE re.registry = ? AND re.name = ? ORDER BY re.version`,
    )
    .all(registry, name) as unknown as Row[]
}

/** One version of one name (`latest` allowed). */
export function selectVersion(
  c: StoreConnections,
  registry: string,
  name: string,
  version: string,
  kind: string,
  columns: string,
): Row | undefined {
  requireRegistry(c, registry)
  const from = `SELECT ${columns} ${FROM}`
  const row =
    version === 'latest'
      ? c
          .arrayStmt(
            `${kind}_latest`,
            from + 'WHERE re.registry = ? AND re.name = ? AND re.is_latest = 1 LIMIT 1',
          )
          .get(registry, name)
      : c
          .arrayStmt(
            `${kind}_version`,
            from + 'WHERE re.registry = ? AND re.name = ? AND re.version = ?',
          )
          .get(registry, name, version)
  return row as unknown as Row | undefined
}

/** The query plan of a list query, for tests that guard against full scans. */
export function explainList(c: StoreConnections, registry: string, query: ListQuery): string[] {
  const {sql, params} = pageStatement(c, registry, query, 'explain', 're.entry_id', 100, FROM)
  return c
    .database()
    .prepare('EXPLAIN QUERY PLAN ' + sql)
    .all(...params)
    .map((r) => String(r.detail))
}

function requireRegistry(c: StoreConnections, registry: string): void {
  if (!c.registries.has(registry)) {
    throw new ToolgateError('ERR_REGISTRY_NOT_FOUND', 'registry not found')
  }
}
