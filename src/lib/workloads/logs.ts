import {open, stat} from 'node:fs/promises'
import {setTimeout as sleep} from 'node:timers/promises'
import {ToolgateError} from '../errors.ts'
import {proxyLogFile, serverLogFile} from './detach.ts'
import {effectiveStatus, readWorkload, type WorkloadState} from './state.ts'

/**
 * `toolgate logs`: the last lines of a workload's log and, with `follow`, every new line until the
 * signal aborts or the workload ends (issue 31: a follow that outlived its workload waited for
 * nothing). The file is polled (fs.watch misses events on some filesystems) and read from where
 * the last read stopped; a rotation (the file shrank or was replaced) restarts at its top.
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

/** How often a follow looks at the workload's state (it ends when the workload does). */
const STATE_CHECK_MS = 1_000

/**
 * Returns the workload's final state when a follow ended because the workload stopped or exited,
 * undefined otherwise (no follow, or interrupted).
 */
export async function showLogs(
  name: string,
  options: LogsOptions,
): Promise<WorkloadState | undefined> {
  const env = options.env ?? process.env
  const workload = await readWorkload(name, env)
  if (!workload) {
    throw new ToolgateError(
      'ERR_NOT_FOUND',
      `workload "${name}" does not exist (see 'toolgate list --all')`,
    )
  }
  // A gateway runs no server: its own log is the one to show (issue 37).
  const proxy = options.proxy || workload.transport === 'gateway'
  const file = proxy ? proxyLogFile(name, env) : serverLogFile(name, env)
  let position = await printTail(file, options.tail, options.write)
  let identity = await fileIdentity(file)
  let checked = Date.now()
  while (options.follow && !options.signal?.aborted) {
    await sleep(options.pollMs ?? 200, undefined, {signal: options.signal}).catch(() => undefined)
    // Read the state before the file: what the workload wrote before it ended is printed below.
    let ended: WorkloadState | undefined
    if (Date.now() - checked >= STATE_CHECK_MS) {
      checked = Date.now()
      const state = await readWorkload(name, env).catch(() => undefined)
      const status = state ? effectiveStatus(state) : 'stopped'
      if (status !== 'running' && status !== 'starting') ended = state
    }
    const now = await fileIdentity(file)
    if (now !== undefined) {
      if (now.ino !== identity?.ino || now.size < position) position = 0
      identity = now
      if (now.size > position) position = await printFrom(file, position, now.size, options.write)
    }
    if (ended) return ended
  }
  return undefined
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
