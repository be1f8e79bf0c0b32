import {OFFICIAL_META_KEY, type OfficialMeta, type ServerEntry, type ServerJson} from '../types.ts'

/**
 * The two shapes a read returns an entry in: the columns of an object (`toEntry`), or the entry's
 * JSON text assembled by SQLite (`ENTRY_TEXT_COLUMNS`, no parse or stringify per request).
 */
export interface EntryRow {
  name: string
  version: string
  server_json: string
  status: string
  published_at: string
  updated_at: string
  is_latest: number
}

export const ENTRY_COLUMNS =
  'sv.name AS name, sv.version AS version, sv.server_json AS server_json, sv.status AS status, ' +
  'sv.published_at AS published_at, sv.updated_at AS updated_at, sv.is_latest AS is_latest'

// The entry `{"server":…,"_meta":{official}}` as JSON text, assembled by SQLite. Byte-identical to
// JSON.stringify(toEntry(row)): server_json was itself written by JSON.stringify (prepareRecord),
// which a parse/stringify round trip reproduces exactly, and the official values are plain ASCII
// (a status keyword, ISO 8601 instants), for which json_quote and JSON.stringify agree.
export const ENTRY_TEXT_COLUMNS =
  `'{"server":' || sv.server_json || ',"_meta":{${JSON.stringify(OFFICIAL_META_KEY)}:{"status":' || ` +
  `json_quote(sv.status) || ',"publishedAt":' || json_quote(sv.published_at) || ` +
  `',"updatedAt":' || json_quote(sv.updated_at) || ',"isLatest":' || ` +
  `CASE WHEN sv.is_latest = 1 THEN 'true' ELSE 'false' END || '}}}' AS entry`

export function toEntry(row: EntryRow): ServerEntry {
  return {
    server: JSON.parse(row.server_json) as ServerJson,
    _meta: {
      [OFFICIAL_META_KEY]: {
        status: row.status as OfficialMeta['status'],
        publishedAt: row.published_at,
        updatedAt: row.updated_at,
        isLatest: row.is_latest === 1,
      },
    },
  }
}
