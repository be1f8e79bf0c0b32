import {
  closeSync,
  existsSync,
  fstatSync,
  openSync,
  readSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs'
import {dirname} from 'node:path'
import {ToolgateError} from '../errors.ts'
import {ensurePrivateDir, openPrivateAppend} from '../fs/private-path.ts'
import {pidAlive} from '../workloads/state.ts'
import {GENESIS, openRecord, sealRecord} from './record.ts'

/**
 * `--audit-log FILE`: sealed JSON lines (record.ts), 0600, appended with O_APPEND and never through
 * a symlink (private-path.ts); rotated by size into FILE.1 … FILE.<keep>. The chain runs on across
 * rotations and restarts: a new file starts from the last hash of the one before. One process
 * writes a file at a time (FILE.lock holds its PID): two writers would interleave two chains.
 */
/** How long a record may wait to be written with the ones after it (docs/audit.md). */
export const FLUSH_MS = 20

export interface FileSinkOptions {
  maxBytes?: number
  keep?: number
}

export class AuditFile {
  readonly path: string
  private fd: number
  private size: number
  private seq: number
  private prev: string
  private readonly maxBytes: number
  private readonly keep: number
  private readonly lock: string
  private pending = ''
  private timer: NodeJS.Timeout | undefined

  constructor(path: string, options: FileSinkOptions = {}) {
    this.path = path
    this.maxBytes = options.maxBytes ?? 10 * 1024 * 1024
    this.keep = options.keep ?? 5
    ensurePrivateDir(dirname(path), dirname(path))
    this.lock = `${path}.lock`
    takeLock(this.lock, path)
    const last = lastRecord(path) ?? lastRecord(`${path}.1`)
    this.seq = last?.seq ?? 0
    this.prev = last?.hash ?? GENESIS
    this.fd = openPrivateAppend(path)
    this.size = fstatSync(this.fd).size
  }

  /**
   * Seals the record now (the chain order is the call order; `fields` is taken over) and writes
   * it with the others of the next FLUSH_MS in one system call: a busy proxy pays a write every
   * few milliseconds, not one per record (a write cost as much as building and sealing a record).
   * The pending text is bounded; past it, it is written at once. `close` writes what is left.
   */
  write(fields: Record<string, unknown>): void {
    if (this.closed) throw new Error(`audit log ${this.path} is closed`)
    const {line, hash} = sealRecord(fields, this.seq + 1, this.prev)
    this.seq++
    this.prev = hash
    this.pending += line + '\n'
    if (this.pending.length > 256 * 1024) this.flush()
    else this.timer ??= setTimeout(() => this.flush(), FLUSH_MS)
  }

  /** Writes what is pending; an error (disk full) reaches the caller of the write that flushes. */
  flush(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    if (this.pending === '') return
    const text = this.pending
    this.pending = ''
    let written: number
    try {
      // The text as it is: node encodes it on the way out, without a Buffer made for it here.
      written = writeSync(this.fd, text)
    } catch (err) {
      this.onError?.(err as Error)
      return
    }
    this.size += written
    if (this.size < this.maxBytes) return
    try {
      this.rotate()
    } catch (err) {
      // The records are written (to the file that should have rotated); try again after another
      // maxBytes rather than on every batch.
      this.size = 0
      this.onRotateError?.(err as Error)
    }
  }

  /** Called with a failed deferred write (the auditor counts it). */
  onError: ((err: Error) => void) | undefined
  /** Called when a rotation failed (nothing was lost: writing goes on to the same file). */
  onRotateError: ((err: Error) => void) | undefined
  private closed = false

  close(): void {
    if (this.closed) return
    this.flush()
    this.closed = true
    closeSync(this.fd)
    try {
      unlinkSync(this.lock)
    } catch {
      // already gone
    }
  }

  /**
   * Renames first and swaps descriptors last: if a step fails (a full disk, a removed
   * directory), the open descriptor still names a file of the chain and writing goes on there.
   */
  private rotate(): void {
    for (let i = this.keep - 1; i >= 1; i--)
      if (existsSync(`${this.path}.${i}`)) renameSync(`${this.path}.${i}`, `${this.path}.${i + 1}`)
    renameSync(this.path, `${this.path}.1`)
    const fd = openPrivateAppend(this.path)
    closeSync(this.fd)
    this.fd = fd
    this.size = 0
  }
}

function takeLock(lock: string, path: string): void {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lock, 'wx', 0o600)
      writeSync(fd, String(process.pid))
      closeSync(fd)
      return
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      const owner = Number(readTail(lock, 32).trim())
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && pidAlive(owner))
        throw new ToolgateError(
          'ERR_CONFLICT',
          `--audit-log ${path}: another toolgate (pid ${owner}) writes this audit log; give each process its own file`,
        )
      unlinkSync(lock)
    }
  }
}

/** The last complete record of a file, read from its tail; undefined when there is none. */
function lastRecord(path: string): {seq: number; hash: string} | undefined {
  if (!existsSync(path) || statSync(path).size === 0) return undefined
  const lines = readTail(path, 256 * 1024)
    .split('\n')
    .filter(Boolean)
  const opened = lines.length ? openRecord(lines.at(-1)!) : undefined
  if (!opened?.ok)
    throw new ToolgateError(
      'ERR_STORAGE',
      `--audit-log ${path}: its last record is damaged; run 'toolgate audit verify ${path}' and move the file away to start a new chain`,
    )
  return {seq: opened.seq, hash: opened.hash}
}

function readTail(path: string, bytes: number): string {
  const fd = openSync(path, 'r')
  try {
    const size = fstatSync(fd).size
    const length = Math.min(size, bytes)
    const buf = Buffer.alloc(length)
    readSync(fd, buf, 0, length, size - length)
    return buf.toString('utf8')
  } finally {
    closeSync(fd)
  }
}
