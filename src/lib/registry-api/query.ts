import {ToolgateError} from '../errors.ts'
import type {ListQuery} from '../registry/types.ts'
import {KINDS, REGISTRY_TYPES, TRANSPORTS} from '../registry/traits.ts'

/**
 * Validates the query string of `GET /registry/{registry}/v0.1/servers` (contract §1). Every
 * error is ERR_BAD_PARAMETER (400) and names the parameter. Unknown parameters are ignored, as
 * upstream registries do, so newer clients keep working; a repeated known parameter is an error
 * because we cannot tell which value the client meant.
 */
export const DEFAULT_LIMIT = 30
export const MAX_LIMIT = 100
const MAX_SEARCH = 200
const MAX_VERSION = 255
const MAX_CURSOR = 1024

// RFC 3339 §5.6 date-time (upper- or lower-case T/Z, optional fraction, Z or ±hh:mm offset).
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/

function bad(param: string, message: string): ToolgateError {
  return new ToolgateError('ERR_BAD_PARAMETER', `${param}: ${message}`, {
    details: {parameter: param},
  })
}

const KNOWN = new Set([
  'limit',
  'cursor',
  'search',
  'updated_since',
  'version',
  'transport',
  'type',
  'registryType',
])

/** A filter value's trait bit; anything else is a 400 naming the values there are. */
function trait(table: Record<string, number>, value: string, param: string): number {
  const bit = Object.prototype.hasOwnProperty.call(table, value) ? table[value] : undefined
  if (bit === undefined)
    throw bad(
      param,
      `must be one of ${Object.keys(table).join(', ')}, got ${JSON.stringify(value.slice(0, 40))}`,
    )
  return bit
}

export function parseListQuery(queryString: string): ListQuery {
  const query: ListQuery = {limit: DEFAULT_LIMIT}
  if (queryString === '') return query
  const seen = new Set<string>()
  for (const [key, value] of new URLSearchParams(queryString)) {
    if (!KNOWN.has(key)) continue
    if (seen.has(key)) throw bad(key, 'must be given at most once')
    seen.add(key)
    switch (key) {
      case 'limit':
        query.limit = parseLimit(value)
        break
      case 'cursor':
        // The store decodes and verifies the cursor; this only bounds what reaches it.
        if (value === '' || value.length > MAX_CURSOR || hasControl(value))
          throw bad('cursor', 'is not a cursor returned by this server')
        query.cursor = value
        break
      case 'search':
        if (value.length > MAX_SEARCH)
          throw bad('search', `must be at most ${MAX_SEARCH} characters`)
        if (hasControl(value)) throw bad('search', 'must not contain control characters')
        if (value !== '') query.search = value
        break
      case 'updated_since':
        query.updatedSince = parseRfc3339(value, 'updated_since')
        break
      case 'version':
        query.version = checkVersion(value, 'version')
        break
      case 'transport':
        query.traits = (query.traits ?? 0) | trait(TRANSPORTS, value, 'transport')
        break
      case 'type':
        query.traits = (query.traits ?? 0) | trait(KINDS, value, 'type')
        break
      case 'registryType':
        query.traits = (query.traits ?? 0) | trait(REGISTRY_TYPES, value, 'registryType')
        break
    }
  }
  return query
}

function parseLimit(value: string): number {
  // Integers only: "1e2", "10.0", " 5" and "+5" are refused rather than guessed at.
  if (!/^\d{1,4}$/.test(value))
    throw bad(
      'limit',
      `must be an integer from 1 to ${MAX_LIMIT}, got ${JSON.stringify(value.slice(0, 20))}`,
    )
  const n = Number(value)
  if (n < 1 || n > MAX_LIMIT)
    throw bad('limit', `must be an integer from 1 to ${MAX_LIMIT}, got ${n}`)
  return n
}

export function parseRfc3339(value: string, param: string): Date {
  const m = RFC3339.exec(value)
  const date = m ? new Date(value) : undefined
  // Date accepts 2024-02-31 by rolling over; compare the fields back to refuse impossible dates.
  if (!m || !date || Number.isNaN(date.getTime()) || !validFields(m)) {
    throw bad(
      param,
      `must be an RFC 3339 date-time such as 2025-01-31T12:00:00Z, got ${JSON.stringify(value.slice(0, 40))}`,
    )
  }
  return date
}

function validFields(m: RegExpExecArray): boolean {
  const [y, mo, d, h, mi, s] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as number[]
  if (
    (mo as number) < 1 ||
    (mo as number) > 12 ||
    (h as number) > 23 ||
    (mi as number) > 59 ||
    (s as number) > 60
  )
    return false
  const daysInMonth = new Date(Date.UTC(y as number, mo as number, 0)).getUTCDate()
  return (d as number) >= 1 && (d as number) <= daysInMonth
}

export function checkVersion(value: string, param: string): string {
  if (value === '') throw bad(param, 'must not be empty')
  if (value.length > MAX_VERSION) throw bad(param, `must be at most ${MAX_VERSION} characters`)
  if (hasControl(value) || /\s|\//.test(value))
    throw bad(param, 'must not contain whitespace, "/" or control characters')
  return value
}

function hasControl(s: string): boolean {
  // eslint-disable-next-line no-control-regex
  return /[\u0000-\u001f\u007f]/.test(s)
}
