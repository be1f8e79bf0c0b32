import {ToolgateError} from '../../errors.ts'
import {checkRecord} from '../record.ts'
import type {ServerJson} from '../types.ts'
import {scanJson} from './json-scan.ts'

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
 *
 * The whole text is validated first; records are then parsed one at a time as they are consumed
 * (`RecordStream`), so a large file never exists as one object graph.
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

/**
 * Records parsed lazily from JSON texts, validated one by one while iterated. `invalid` fills up
 * during iteration. Iterate once.
 */
export class RecordStream implements Iterable<ServerJson> {
  readonly invalid: InvalidRecord[] = []
  readonly size: number
  #texts: () => Iterable<string>
  #listEntries: boolean
  #afterParse: ((record: unknown, raw: unknown) => void) | undefined

  constructor(
    size: number,
    texts: () => Iterable<string>,
    options: {listEntries?: boolean; afterParse?: (record: unknown, raw: unknown) => void} = {},
  ) {
    this.size = size
    this.#texts = texts
    this.#listEntries = options.listEntries ?? false
    this.#afterParse = options.afterParse
  }

  *[Symbol.iterator](): Iterator<ServerJson> {
    let index = 0
    for (const text of this.#texts()) {
      const item: unknown = JSON.parse(text)
      const checked = checkItem(item, index, this.#listEntries)
      if ('problem' in checked) this.invalid.push(checked.problem)
      else {
        this.#afterParse?.(checked.record, item)
        yield checked.record
      }
      index++
    }
  }
}

/** Validates the document and returns its records as a lazy stream. */
export function streamRegistryDocument(input: string | Uint8Array, where: string): RecordStream {
  const bytes =
    typeof input === 'string'
      ? Buffer.from(input, 'utf8')
      : Buffer.from(input.buffer, input.byteOffset, input.byteLength)
  let scan
  try {
    scan = scanJson(bytes, ['data', 'servers'])
  } catch (err) {
    throw new ToolgateError(
      'ERR_SOURCE_LOAD',
      `${where}: not valid JSON (${(err as Error).message})`,
      {
        cause: err,
      },
    )
  }
  if (scan.root === 'other') throw new ToolgateError('ERR_SOURCE_LOAD', `${where}: ${SHAPE_HINT}`)
  const ranges = scan.elements
  if (!ranges) throw new ToolgateError('ERR_SOURCE_LOAD', `${where}: data.servers: ${SHAPE_HINT}`)
  return new RecordStream(ranges.length, function* () {
    for (const [start, end] of ranges) yield bytes.toString('utf8', start, end)
  })
}

/** Eager form of `streamRegistryDocument` (small documents, tests). */
export function parseRegistryDocument(text: string | Uint8Array, where: string): ParsedDocument {
  const stream = streamRegistryDocument(text, where)
  const servers = [...stream]
  return {servers, invalid: stream.invalid}
}

function checkItem(
  item: unknown,
  index: number,
  listEntries: boolean,
): {record: ServerJson} | {problem: InvalidRecord} {
  const isEntry =
    item !== null &&
    typeof item === 'object' &&
    !Array.isArray(item) &&
    'server' in item &&
    !('name' in item)
  if (!isEntry && listEntries) {
    return {problem: {index, field: 'server', reason: 'must be an object holding a server.json'}}
  }
  const record = isEntry ? (item as {server: unknown}).server : item
  const problem = checkRecord(record)
  if (problem) {
    return {
      problem: {
        index,
        field: isEntry ? `server.${problem.field}` : problem.field,
        reason: problem.reason,
      },
    }
  }
  return {record: record as ServerJson}
}
