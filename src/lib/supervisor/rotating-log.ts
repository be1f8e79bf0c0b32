import {closeSync, fstatSync, renameSync, writeSync} from 'node:fs'
import {dirname} from 'node:path'
import {ensurePrivateDir, openPrivateAppend} from '../fs/private-path.ts'

/**
 * An append-only log file with a size bound: past `maxBytes` the file becomes `<path>.1` (the
 * previous `.1` is dropped) and a new file starts, so a chatty server never fills the disk. Files
 * are 0600 (enforced on open), never opened through a symlink, in a directory only this user can
 * write (fs/private-path.ts): a server's stderr can hold anything. Writes are synchronous — log
 * lines are small and rare next to the traffic, and a crash loses nothing that was written.
 */
export const DEFAULT_LOG_MAX_BYTES = 10 * 1024 * 1024

export class RotatingLog {
  private fd: number
  private size: number

  readonly path: string
  private readonly maxBytes: number

  /** `top`: toolgate's own directory above the log's, checked too (default: the log's alone). */
  constructor(path: string, options: {maxBytes?: number; top?: string} = {}) {
    this.path = path
    this.maxBytes = options.maxBytes ?? DEFAULT_LOG_MAX_BYTES
    ensurePrivateDir(dirname(path), options.top ?? dirname(path))
    this.fd = openPrivateAppend(path)
    this.size = fstatSync(this.fd).size
  }

  write(chunk: string | Uint8Array): void {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
    if (this.size > 0 && this.size + bytes.length > this.maxBytes) this.rotate()
    writeSync(this.fd, bytes)
    this.size += bytes.length
  }

  /** One line with a trailing newline. */
  line(text: string): void {
    this.write(text.endsWith('\n') ? text : text + '\n')
  }

  close(): void {
    closeSync(this.fd)
  }

  private rotate(): void {
    closeSync(this.fd)
    renameSync(this.path, `${this.path}.1`)
    this.fd = openPrivateAppend(this.path)
    this.size = 0
  }
}
