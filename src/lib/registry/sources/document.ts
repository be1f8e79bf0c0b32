import {ToolgateError} from '../../errors.ts'
import {checkRecord} from '../record.ts'
import type {ServerJson} from '../types.ts'

/**
 * Parses a registry data file (contract §1): either the upstream wrapper
 * `{"version": "...", "meta": {"last_updated": "..."}, "data": {"servers": [ <server.json>, ... ]}}`
 * or a plain array of server.json. Elements shaped like list entries (`{"server": {...}, "_meta"}`)
 * are unwrapped, so a saved API response body also loads.
 *
 * Policy: a file that is not JSON, or whose top level has neither shape, fails as a whole
 * (ERR_SOURCE_LOAD naming the file): serving a half-understood file would silently drop servers.
 * A single bad record is skipped and reported with its index and field, so one typo does not
 * take a whole registry down.
 */
export interface InvalidRecord {
  /** Zero-based position in the servers array. */
  index: number
  field: string
  reason: string
}

export interface ParsedDocument {
  servers: ServerJson[]
  invalid: InvalidRecord[]
}

const SHAPE_HINT = 'expected a JSON array of server.json or {"data":{"servers":[…]}}'

export function parseRegistryDocument(text: string, where: string): ParsedDocument {
  let doc: unknown
  try {
    doc = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text)
  } catch (err) {
    throw new ToolgateError(
      'ERR_SOURCE_LOAD',
      `${where}: not valid JSON (${(err as Error).message})`,
      {
        cause: err,
      },
    )
  }
  let list: unknown
  if (Array.isArray(doc)) {
    list = doc
  } else if (doc && typeof doc === 'object') {
    const data = (doc as {data?: unknown}).data
    list = data && typeof data === 'object' ? (data as {servers?: unknown}).servers : undefined
    if (!Array.isArray(list))
      throw new ToolgateError('ERR_SOURCE_LOAD', `${where}: data.servers: ${SHAPE_HINT}`)
  } else {
    throw new ToolgateError('ERR_SOURCE_LOAD', `${where}: ${SHAPE_HINT}`)
  }
  return validateRecords(list as unknown[], false)
}

/**
 * Validates records one by one. With `listEntries`, each element must be `{server, _meta}` (the
 * API list body); otherwise a bare server.json or such an entry is accepted.
 */
export function validateRecords(list: unknown[], listEntries: boolean): ParsedDocument {
  const servers: ServerJson[] = []
  const invalid: InvalidRecord[] = []
  list.forEach((item, index) => {
    let record = item
    const isEntry =
      item !== null &&
      typeof item === 'object' &&
      !Array.isArray(item) &&
      'server' in item &&
      !('name' in item)
    if (isEntry) record = (item as {server: unknown}).server
    else if (listEntries) {
      invalid.push({index, field: 'server', reason: 'must be an object holding a server.json'})
      return
    }
    const problem = checkRecord(record)
    if (problem) {
      invalid.push({
        index,
        field: isEntry ? `server.${problem.field}` : problem.field,
        reason: problem.reason,
      })
      return
    }
    servers.push(record as ServerJson)
  })
  return {servers, invalid}
}
