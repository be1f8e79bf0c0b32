import {closeSync, fstatSync, openSync, renameSync, writeSync} from 'node:fs'
import {mkdirSync} from 'node:fs'
import {dirname} from 'node:path'

/**
 * An append-only log file with a size bound: past `maxBytes` the file becomes `<path>.1` (the
 * previous `.1` is dropped) and a new file starts, so a chatty server never fills the disk. Files
 * are 0600: a server's stderr can hold anything. Writes are synchronous — log lines are small and
 * rare next to the traffic, and a crash loses nothing that was written.
 */
export const DEFAULT_LOG_MAX_BYTES = 10 * 1024 * 1024

export class RotatingLog {
  private fd: number
  private size: number

  readonly path: string
  private readonly maxBytes: number

  constructor(path: string, maxBytes = DEFAULT_LOG_MAX_BYTES) {
    this.path = path
    this.maxBytes = maxBytes
    mkdirSync(dirname(path), {recursive: true, mode: 0o700})
    this.fd = openSync(path, 'a', 0o600)
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
    this.fd = openSync(this.path, 'a', 0o600)
    this.size = 0
  }
}
