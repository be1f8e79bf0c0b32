import {ToolgateError} from '../../errors.ts'
import {checkRecord} from '../record.ts'
import type {ServerJson} from '../types.ts'
import {closeSync, fstatSync, openSync, readSync, statSync, type Stats} from 'node:fs'
import {Worker} from 'node:worker_threads'
import {postedError, workersCanImport, type PostedError} from '../worker-module.ts'
import {FILE_WINDOW_BYTES, scanJson, scanJsonFile, type ScanResult} from './json-scan.ts'

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

/** Where a local file's records lie: enough to read the same records again in another thread. */
export interface FileRecords {
  path: string
  /** The file as scanned: a rewrite since then fails the load. */
  stat: Pick<Stats, 'ino' | 'size' | 'mtimeMs'>
  /** (start, end) byte offsets of every element, in file order. */
  ranges: Float64Array
  windowBytes: number
}

/** Invalid records kept with their details (the rest only counted): a file of a million `{}` must not cost a million objects. */
export const MAX_INVALID_KEPT = 100

/**
 * Records parsed lazily from JSON texts, validated one by one while iterated. `invalid` (the
 * first MAX_INVALID_KEPT) and `invalidCount` fill up during iteration. Iterate once.
 */
export class RecordStream implements Iterable<ServerJson> {
  readonly invalid: InvalidRecord[] = []
  #invalidCount = 0
  readonly size: number
  /** Set for a local file's records (see off-thread.ts). */
  readonly file: FileRecords | undefined
  #texts: () => Iterable<string>
  #listEntries: boolean
  #afterParse: ((record: unknown, raw: unknown) => void) | undefined

  constructor(
    size: number,
    texts: () => Iterable<string>,
    options: {
      listEntries?: boolean
      afterParse?: (record: unknown, raw: unknown) => void
      file?: FileRecords
    } = {},
  ) {
    this.size = size
    this.file = options.file
    this.#texts = texts
    this.#listEntries = options.listEntries ?? false
    this.#afterParse = options.afterParse
  }

  /** How many records were invalid, the ones not kept in `invalid` included. */
  get invalidCount(): number {
    return this.#invalidCount
  }

  /** Counts `count` invalid records, keeping `problem` while fewer than MAX_INVALID_KEPT are. */
  noteInvalid(problem: InvalidRecord | undefined, count: number): void {
    this.#invalidCount += count
    if (problem && this.invalid.length < MAX_INVALID_KEPT) this.invalid.push(problem)
  }

  *[Symbol.iterator](): Iterator<ServerJson> {
    let index = 0
    for (const text of this.#texts()) {
      const item: unknown = JSON.parse(text)
      const checked = checkItem(item, index, this.#listEntries)
      if ('problem' in checked) this.noteInvalid(checked.problem, 1)
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
  const ranges = elementRanges(() => scanJson(bytes, SERVERS_PATH), where)
  return new RecordStream(ranges.length, function* () {
    for (const [start, end] of ranges) yield bytes.toString('utf8', start, end)
  })
}

const SERVERS_PATH = ['data', 'servers']

function elementRanges(scan: () => ScanResult, where: string): Array<[number, number]> {
  let result: ScanResult
  try {
    result = scan()
  } catch (err) {
    // A read error (EISDIR, EIO) is the caller's "cannot read", not a JSON problem.
    if ((err as NodeJS.ErrnoException).code !== undefined) throw err
    throw new ToolgateError(
      'ERR_SOURCE_LOAD',
      `${where}: not valid JSON (${(err as Error).message})`,
      {
        cause: err,
      },
    )
  }
  if (result.root === 'other') throw new ToolgateError('ERR_SOURCE_LOAD', `${where}: ${SHAPE_HINT}`)
  const ranges = result.elements
  if (!ranges) throw new ToolgateError('ERR_SOURCE_LOAD', `${where}: data.servers: ${SHAPE_HINT}`)
  return ranges
}

/**
 * As streamRegistryDocument for a local file, which is never read whole: it is validated through a
 * sliding window (`scanJsonFile`), and each record is read back from the file when it is consumed.
 * A file replaced or rewritten between the two passes fails the load (ERR_SOURCE_LOAD): the store
 * rolls back and keeps the last good data, and the change that caused it triggers another sync.
 */
export function streamRegistryFile(path: string, windowBytes = FILE_WINDOW_BYTES): RecordStream {
  const {stat, ranges} = scanRegistryFile(path, windowBytes)
  return recordsOfFile({path, stat, ranges: flatRanges(ranges), windowBytes})
}

/** The validating scan of a registry file: its identity (to detect a rewrite) and element ranges. */
export function scanRegistryFile(
  path: string,
  windowBytes = FILE_WINDOW_BYTES,
): {stat: Pick<Stats, 'ino' | 'size' | 'mtimeMs'>; ranges: Array<[number, number]>} {
  const fd = openSync(path, 'r')
  try {
    const stat = fstatSync(fd)
    const ranges = elementRanges(() => scanJsonFile(fd, stat.size, SERVERS_PATH, windowBytes), path)
    return {stat: {ino: stat.ino, size: stat.size, mtimeMs: stat.mtimeMs}, ranges}
  } finally {
    closeSync(fd)
  }
}

// The scan reads and checks every byte (about 1.5 s for 100 MB): in a worker thread, so the event
// loop keeps answering clients meanwhile. The worker imports this very module; in the standalone
// executable (one bundled file, no module to import) the scan runs inline instead.
const WORKER = `
const {workerData, parentPort} = require('node:worker_threads')
import(workerData.module).then((m) => {
  try {
    const {stat, ranges} = m.scanRegistryFile(workerData.path, workerData.windowBytes)
    const flat = m.flatRanges(ranges)
    parentPort.postMessage({stat, flat}, [flat.buffer])
  } catch (err) {
    parentPort.postMessage({error: {message: err.message, code: err.code, toolgate: err.name === 'ToolgateError'}})
  }
}, (err) => parentPort.postMessage({error: {message: String(err && err.message), code: 'ERR_WORKER_IMPORT'}}))
`

/** Files below this size are scanned on the event loop (a worker would cost more than it saves). */
export const INLINE_SCAN_BYTES = 4 * 1024 * 1024

/** As streamRegistryFile, with the scan off the event loop (see WORKER). */
export async function streamRegistryFileAsync(
  path: string,
  windowBytes = FILE_WINDOW_BYTES,
): Promise<RecordStream> {
  const module = import.meta.url
  // Small files scan faster than a worker starts (4 MiB ≈ 50 ms of scanning).
  if (!workersCanImport || statSync(path).size < INLINE_SCAN_BYTES)
    return streamRegistryFile(path, windowBytes)
  const result = await new Promise<{
    stat?: Pick<Stats, 'ino' | 'size' | 'mtimeMs'>
    flat?: Float64Array
    error?: PostedError
  }>((resolve, reject) => {
    const worker = new Worker(WORKER, {eval: true, workerData: {module, path, windowBytes}})
    worker.once('message', (m) => {
      resolve(m)
      void worker.terminate()
    })
    worker.once('error', reject)
    worker.once('exit', (code) => reject(new Error(`scan worker exited with ${code}`)))
  })
  if (result.error) {
    if (result.error.code === 'ERR_WORKER_IMPORT') return streamRegistryFile(path, windowBytes)
    throw postedError(result.error)
  }
  return recordsOfFile({path, stat: result.stat!, ranges: result.flat!, windowBytes})
}

/**
 * Element ranges as one typed array of (start, end) pairs. The ranges live for a whole sync: as
 * 100,000 two-element arrays they were ~7 MB of small objects on the V8 heap, promoted and then
 * marked by the event loop's GCs while the sync ran; as a Float64Array they are one 1.5 MB block
 * outside it.
 */
export function flatRanges(ranges: Array<[number, number]>): Float64Array {
  const flat = new Float64Array(ranges.length * 2)
  ranges.forEach(([start, end], i) => {
    flat[2 * i] = start
    flat[2 * i + 1] = end
  })
  return flat
}

/** The records of a scanned file, each read back from the file when consumed. */
export function recordsOfFile(file: FileRecords): RecordStream {
  const {path, stat, ranges, windowBytes} = file
  const texts = function* () {
    const again = openSync(path, 'r')
    try {
      const now = fstatSync(again)
      if (now.ino !== stat.ino || now.size !== stat.size || now.mtimeMs !== stat.mtimeMs) {
        throw new ToolgateError('ERR_SOURCE_LOAD', `${path}: changed while being loaded`)
      }
      // Records lie in file order: read the file forward in windows and cut each one out. One
      // buffer is reused (each record is copied out as a string), grown only for a larger record.
      let store = Buffer.allocUnsafe(windowBytes)
      let buf = store.subarray(0, 0)
      let bufStart = 0
      for (let i = 0; i < ranges.length; i += 2) {
        const start = ranges[i]!
        const end = ranges[i + 1]!
        if (start < bufStart || end > bufStart + buf.length) {
          if (end - start > store.length) store = Buffer.allocUnsafe(end - start)
          const next = store.subarray(0, Math.min(store.length, stat.size - start))
          let got = 0
          while (got < next.length) {
            const r = readSync(again, next, got, next.length - got, start + got)
            if (r === 0)
              throw new ToolgateError('ERR_SOURCE_LOAD', `${path}: changed while being loaded`)
            got += r
          }
          buf = next
          bufStart = start
        }
        yield buf.toString('utf8', start - bufStart, end - bufStart)
      }
    } finally {
      closeSync(again)
    }
  }
  return new RecordStream(ranges.length / 2, texts, {file})
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
