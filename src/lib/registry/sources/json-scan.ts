import {readSync} from 'node:fs'

/**
 * A validating JSON scanner (RFC 8259 grammar) that builds no values: it checks a whole document
 * and returns the text ranges of the elements of one array inside it. A registry file of 100,000
 * versions is ~130 MB of text but several hundred MB as one object graph; scanning first and
 * parsing one element at a time keeps serve's peak memory near the size of the text, and
 * `scanJsonFile` (a sliding window over the file) keeps it near the size of the window.
 */
export class JsonScanError extends Error {
  readonly offset: number
  constructor(message: string, offset: number) {
    super(`${message} at offset ${offset}`)
    this.offset = offset
  }
}

/** A path step: an object key to descend into. */
export type ScanPath = readonly string[]

export interface ScanResult {
  /** Type of the root value. */
  root: 'object' | 'array' | 'other'
  /** [start, end) of each element of the array found at `path` (undefined when not found). */
  elements: Array<[number, number]> | undefined
  /** Type of the value found at `path`, when found. */
  target: 'array' | 'other' | undefined
}

const isHex = (c: number) =>
  (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
const isDigit = (c: number) => c >= 0x30 && c <= 0x39

/**
 * Scans `text`; collects the element ranges of the root array, or of the array that `path` leads to
 * through objects. Throws JsonScanError (or RangeError for absurd nesting) on invalid JSON.
 */
export function scanJson(input: string | Uint8Array, path: ScanPath): ScanResult {
  // Works on UTF-8 bytes (JSON's structural characters are ASCII, and bytes of multi-byte
  // characters are all >= 0x80), so a file never needs to become one huge string.
  const text =
    typeof input === 'string'
      ? Buffer.from(input, 'utf8')
      : Buffer.from(input.buffer, input.byteOffset, input.byteLength)
  const n = text.length
  return scanBytes(
    n,
    (k) => (k < n ? (text[k] as number) : -1),
    (start, end) => text.toString('utf8', start, end),
    path,
  )
}

/** Bytes of a file read through a window of this size (plus what a short key needs behind it). */
export const FILE_WINDOW_BYTES = 1024 * 1024
const KEY_MAX = 256
// Bytes of the previous window kept in front of the next one (a short key plus lookahead).
const KEEP_BEHIND = KEY_MAX + 64

/**
 * As scanJson, reading the file behind `fd` (`size` bytes) through a small sliding window, so a
 * 100 MB registry file is validated without ever being in memory whole.
 */
export function scanJsonFile(
  fd: number,
  size: number,
  path: ScanPath,
  windowBytes = FILE_WINDOW_BYTES,
): ScanResult {
  let winStart = 0
  let win = Buffer.alloc(0)
  // Two buffers used in turn: a fresh one per window would leave ~130 MB of dead 1 MB buffers
  // for the GC to find on a 100,000-version file, and under CPU contention it finds them late.
  let spare = Buffer.allocUnsafe(KEEP_BEHIND + windowBytes)
  let other = Buffer.allocUnsafe(KEEP_BEHIND + windowBytes)
  // Loads the window that holds byte k (the scan only moves forward), keeping the tail of the
  // previous one so a short key that straddles two windows can still be decoded.
  const load = (k: number): number => {
    if (k >= size) return -1
    const keep = Math.min(win.length, KEEP_BEHIND)
    const next = spare
    spare = other
    other = next
    win.copy(next, 0, win.length - keep)
    const from = winStart + win.length
    let got = 0
    while (got < windowBytes && from + got < size) {
      const r = readSync(fd, next, keep + got, windowBytes - got, from + got)
      if (r === 0) break
      got += r
    }
    if (got === 0) throw new JsonScanError('file shrank while being read', from)
    winStart = from - keep
    win = next.subarray(0, keep + got)
    return k - winStart < win.length ? (win[k - winStart] as number) : load(k)
  }
  return scanBytes(
    size,
    (k) => {
      const r = k - winStart
      return r < win.length ? (win[r] as number) : load(k)
    },
    (start, end) => win.toString('utf8', start - winStart, end - winStart),
    path,
  )
}

function scanBytes(
  n: number,
  at: (k: number) => number,
  decode: (start: number, end: number) => string,
  path: ScanPath,
): ScanResult {
  let i = 0
  const literal = (word: string) => {
    for (let k = 0; k < word.length; k++) if (at(i + k) !== word.charCodeAt(k)) return false
    i += word.length
    return true
  }
  let elements: Array<[number, number]> | undefined
  let target: ScanResult['target']

  const ws = () => {
    while (i < n) {
      const c = at(i)
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++
      else break
    }
  }
  const fail = (what: string): never => {
    throw new JsonScanError(i >= n ? 'unexpected end of JSON' : what, i)
  }
  const string = (): string | undefined => {
    // Returns the decoded key only when it is short and escape-free (we compare keys, not values).
    const start = ++i
    let plain = true
    while (i < n) {
      const c = at(i)
      if (c === 0x22) {
        i++
        return plain && i - 1 - start <= KEY_MAX ? decode(start, i - 1) : undefined
      }
      if (c < 0x20) fail('control character in string')
      if (c === 0x5c) {
        plain = false
        const e = at(i + 1)
        if (e === 0x75) {
          for (let k = i + 2; k < i + 6; k++) if (!isHex(at(k))) fail('bad \\u escape')
          i += 6
        } else if (e !== -1 && '"\\/bfnrt'.includes(String.fromCharCode(e))) i += 2
        else fail('bad escape')
      } else i++
    }
    return fail('unterminated string')
  }
  const value = (depth: number, collect: boolean): void => {
    ws()
    const c = at(i)
    if (c === 0x7b) {
      i++
      ws()
      if (at(i) === 0x7d) {
        i++
        return
      }
      for (;;) {
        ws()
        if (at(i) !== 0x22) fail('expected a string key')
        const key = string()
        ws()
        if (at(i) !== 0x3a) fail('expected ":"')
        i++
        const follow = collect && depth < path.length && key === path[depth]
        if (follow && depth + 1 === path.length) {
          ws()
          target = at(i) === 0x5b ? 'array' : 'other'
          if (target === 'array') {
            elements = []
            array(depth + 1, elements)
          } else value(depth + 1, false)
        } else value(depth + 1, follow)
        ws()
        const d = at(i)
        if (d === 0x2c) i++
        else if (d === 0x7d) {
          i++
          return
        } else fail('expected "," or "}"')
      }
    }
    if (c === 0x5b) return array(depth, undefined)
    if (c === 0x22) {
      string()
      return
    }
    if (literal('true') || literal('false') || literal('null')) return
    number()
  }
  // RFC 8259 §6: -? int frac? exp?
  const number = () => {
    if (at(i) === 0x2d) i++
    if (at(i) === 0x30) i++
    else if (isDigit(at(i))) while (isDigit(at(i))) i++
    else fail('unexpected character')
    if (at(i) === 0x2e) {
      i++
      if (!isDigit(at(i))) fail('expected a digit')
      while (isDigit(at(i))) i++
    }
    if (at(i) === 0x65 || at(i) === 0x45) {
      i++
      if (at(i) === 0x2b || at(i) === 0x2d) i++
      if (!isDigit(at(i))) fail('expected a digit')
      while (isDigit(at(i))) i++
    }
  }
  const array = (depth: number, out: Array<[number, number]> | undefined): void => {
    i++ // [
    ws()
    if (at(i) === 0x5d) {
      i++
      return
    }
    for (;;) {
      ws()
      const start = i
      value(depth + 1, false)
      out?.push([start, i])
      ws()
      const d = at(i)
      if (d === 0x2c) i++
      else if (d === 0x5d) {
        i++
        return
      } else fail('expected "," or "]"')
    }
  }

  if (at(0) === 0xef && at(1) === 0xbb && at(2) === 0xbf) i = 3 // UTF-8 byte-order mark
  ws()
  const first = at(i)
  const root: ScanResult['root'] = first === 0x7b ? 'object' : first === 0x5b ? 'array' : 'other'
  // A root array is itself the list (plain-array format), whatever `path` says.
  if (root === 'array') {
    elements = []
    target = 'array'
    array(0, elements)
  } else {
    value(0, root === 'object')
  }
  ws()
  if (i < n) fail('unexpected text after the JSON value')
  return {root, elements, target}
}
