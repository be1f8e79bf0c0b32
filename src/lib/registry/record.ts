import {createHash} from 'node:crypto'
import {validateServerName} from './names.ts'
import {traitsOf} from './traits.ts'
import {OFFICIAL_META_KEY, type OfficialMeta, type ServerJson} from './types.ts'

/**
 * Validation of one incoming server.json record and its preparation for storage: the official
 * `_meta` block is registry-owned (MCP registry API v0.1), so it is stripped from the stored
 * document and rebuilt from columns on the way out.
 */
const MAX_VERSION_LENGTH = 255

/** A problem with one record: which field, and why. */
export interface RecordProblem {
  field: string
  reason: string
}

function validateVersion(version: unknown): string | undefined {
  if (typeof version !== 'string' || version.length === 0) return 'must be a non-empty string'
  if (version.length > MAX_VERSION_LENGTH) return `must be at most ${MAX_VERSION_LENGTH} characters`
  // `latest` is a keyword of the API (`?version=latest`, `/versions/latest`): a record carrying it
  // could never be addressed exactly.
  if (version === 'latest') return '"latest" is reserved'
  // eslint-disable-next-line no-control-regex -- control characters are exactly what we refuse
  if (/[\u0000-\u001f\u007f]/.test(version)) return 'must not contain control characters'
  return undefined
}

/** The first problem of a record, or undefined when it can be stored. */
export function checkRecord(record: unknown): RecordProblem | undefined {
  if (record === null || typeof record !== 'object' || Array.isArray(record)) {
    return {field: '(record)', reason: 'must be a JSON object'}
  }
  const r = record as Record<string, unknown>
  const nameProblem = validateServerName(r.name)
  if (nameProblem) return {field: 'name', reason: nameProblem}
  const versionProblem = validateVersion(r.version)
  if (versionProblem) return {field: 'version', reason: versionProblem}
  if (
    r._meta !== undefined &&
    (r._meta === null || typeof r._meta !== 'object' || Array.isArray(r._meta))
  ) {
    return {field: '_meta', reason: 'must be an object'}
  }
  for (const key in r) {
    if (nestsDeeper(r[key], MAX_NESTING - 1)) {
      return {field: key, reason: `must not nest objects or arrays more than ${MAX_NESTING} deep`}
    }
  }
  return undefined
}

// A record is turned back into text with recursive JSON.stringify (on the event loop when an
// answer is filtered, in the staging worker when it is stored): nesting deep enough to exhaust one
// thread's stack but not another's would be stored by one path and fail in the other. No real
// server.json comes near this.
const MAX_NESTING = 64

/** Whether `value` holds objects or arrays more than `levels` deep (recursion bounded by it). */
function nestsDeeper(value: unknown, levels: number): boolean {
  if (value === null || typeof value !== 'object') return false
  if (levels === 0) return true
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (nestsDeeper(value[i], levels - 1)) return true
    return false
  }
  for (const key in value) {
    if (nestsDeeper((value as Record<string, unknown>)[key], levels - 1)) return true
  }
  return false
}

/** Upstream official metadata, kept only from sources we trust for it (api sources). */
export type UpstreamOfficial = Partial<OfficialMeta>

const STATUSES = new Set(['active', 'deprecated', 'deleted'])

function rfc3339(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined
  const t = Date.parse(value)
  return Number.isNaN(t) ? undefined : new Date(t).toISOString()
}

/** Reads the official block of a `_meta` object, keeping only well-formed fields. */
function readOfficial(meta: unknown): UpstreamOfficial | undefined {
  if (!meta || typeof meta !== 'object') return undefined
  const block = (meta as Record<string, unknown>)[OFFICIAL_META_KEY]
  if (!block || typeof block !== 'object') return undefined
  const b = block as Record<string, unknown>
  const out: UpstreamOfficial = {}
  if (typeof b.status === 'string' && STATUSES.has(b.status))
    out.status = b.status as OfficialMeta['status']
  const published = rfc3339(b.publishedAt)
  if (published) out.publishedAt = published
  const updated = rfc3339(b.updatedAt)
  if (updated) out.updatedAt = updated
  if (typeof b.isLatest === 'boolean') out.isLatest = b.isLatest
  return out
}

export interface PreparedRecord {
  name: string
  version: string
  /** The document as stored: JSON text without the official `_meta` block. */
  json: string
  hash: string
  /** Lower-cased name, title and description, for case-insensitive substring search. */
  searchText: string
  official: UpstreamOfficial | undefined
  /** What the list filters read (traits.ts). */
  traits: number
}

export function prepareRecord(server: ServerJson, trustOfficial: boolean): PreparedRecord {
  let stored: ServerJson = server
  let official: UpstreamOfficial | undefined
  const meta = server._meta
  if (meta && typeof meta === 'object' && OFFICIAL_META_KEY in meta) {
    if (trustOfficial) official = readOfficial(meta)
    const {[OFFICIAL_META_KEY]: _dropped, ...rest} = meta
    stored = {...server}
    if (Object.keys(rest).length > 0) stored._meta = rest
    else delete stored._meta
  }
  const json = JSON.stringify(stored)
  const text = (v: unknown) => (typeof v === 'string' ? v : '')
  return {
    name: server.name,
    version: server.version,
    json,
    hash: createHash('sha256').update(json).digest('base64url'),
    searchText: [server.name, text(server.title), text(server.description)]
      .join('\n')
      .toLowerCase(),
    official,
    traits: traitsOf(server),
  }
}
