import {open, stat} from 'node:fs/promises'
import {setTimeout as sleep} from 'node:timers/promises'
import {ToolgateError} from '../errors.ts'
import {proxyLogFile, serverLogFile} from './detach.ts'
import {readWorkload} from './state.ts'

/**
 * `toolgate logs`: the last lines of a workload's log and, with `follow`, every new line until the
 * signal aborts. The file is polled (fs.watch misses events on some filesystems) and read from
 * where the last read stopped; a rotation (the file shrank or was replaced) restarts at its top.
 */

export interface LogsOptions {
  proxy: boolean
  tail: number
  follow: boolean
  signal?: AbortSignal
  write: (text: string) => void
  env?: NodeJS.ProcessEnv
  pollMs?: number
}

const TAIL_WINDOW = 4 * 1024 * 1024

export async function showLogs(name: string, options: LogsOptions): Promise<void> {
  const env = options.env ?? process.env
  if (!(await readWorkload(name, env))) {
    throw new ToolgateError(
      'ERR_NOT_FOUND',
      `workload "${name}" does not exist (see 'toolgate list --all')`,
    )
  }
  const file = options.proxy ? proxyLogFile(name, env) : serverLogFile(name, env)
  let position = await printTail(file, options.tail, options.write)
  let identity = await fileIdentity(file)
  while (options.follow && !options.signal?.aborted) {
    await sleep(options.pollMs ?? 200, undefined, {signal: options.signal}).catch(() => undefined)
    const now = await fileIdentity(file)
    if (now === undefined) continue
    if (now.ino !== identity?.ino || now.size < position) position = 0
    identity = now
    if (now.size > position) position = await printFrom(file, position, now.size, options.write)
  }
}

async function fileIdentity(file: string): Promise<{ino: number; size: number} | undefined> {
  try {
    const s = await stat(file)
    return {ino: s.ino, size: s.size}
  } catch {
    return undefined
  }
}

/** Prints the last `n` lines; returns the offset after what was read. */
async function printTail(file: string, n: number, write: (t: string) => void): Promise<number> {
  const id = await fileIdentity(file)
  if (!id) return 0
  const start = Math.max(0, id.size - TAIL_WINDOW)
  const handle = await open(file, 'r')
  try {
    const buf = Buffer.alloc(id.size - start)
    await handle.read(buf, 0, buf.length, start)
    const text = buf.toString('utf8')
    const lines = text.split('\n')
    if (lines.at(-1) === '') lines.pop()
    const shown = n > 0 ? lines.slice(-n) : []
    if (shown.length) write(shown.join('\n') + '\n')
  } finally {
    await handle.close()
  }
  return id.size
}

async function printFrom(
  file: string,
  from: number,
  to: number,
  write: (t: string) => void,
): Promise<number> {
  const handle = await open(file, 'r')
  try {
    const buf = Buffer.alloc(Math.min(to - from, TAIL_WINDOW))
    const {bytesRead} = await handle.read(buf, 0, buf.length, from)
    // Up to the last complete line; a half-written line waits for the next poll.
    const end = buf.subarray(0, bytesRead).lastIndexOf(10)
    if (end === -1) {
      if (bytesRead < TAIL_WINDOW) return from
      write(buf.subarray(0, bytesRead).toString('utf8')) // a giant line: shown in pieces
      return from + bytesRead
    }
    write(buf.subarray(0, end + 1).toString('utf8'))
    return from + end + 1
  } finally {
    await handle.close()
  }
}
