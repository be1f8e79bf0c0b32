import {randomBytes} from 'node:crypto'
import {hostname} from 'node:os'
import {link, mkdir, open, readFile, rename, stat, unlink} from 'node:fs/promises'
import {dirname} from 'node:path'
import {ToolgateError} from '../errors.ts'

/**
 * An exclusive lock file next to the data it guards, so concurrent writers (separate processes)
 * never lose an update in a read-modify-write. Acquired by creating `<path>` with O_EXCL (`wx`);
 * it holds `pid host time token`. A lock whose owner process is gone (same host) or that is older
 * than `staleMs` is broken. Waiting is bounded by `timeoutMs`.
 */
export interface FileLockOptions {
  timeoutMs?: number
  staleMs?: number
  pollMs?: number
  now?: () => number
}

interface LockInfo {
  pid: number
  host: string
  time: number
  token: string
}

function parseLock(text: string): LockInfo | undefined {
  const [pid, host, time, token] = text.trim().split(' ')
  if (!pid || !host || !time || !token) return undefined
  return {pid: Number(pid), host, time: Number(time), token}
}

function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export async function withFileLock<T>(
  path: string,
  fn: () => Promise<T>,
  options: FileLockOptions = {},
): Promise<T> {
  const release = await acquireFileLock(path, options)
  try {
    return await fn()
  } finally {
    await release()
  }
}

export async function acquireFileLock(
  path: string,
  options: FileLockOptions = {},
): Promise<() => Promise<void>> {
  const timeoutMs = options.timeoutMs ?? 60_000
  const staleMs = options.staleMs ?? 30_000
  const pollMs = options.pollMs ?? 25
  const now = options.now ?? Date.now
  const host = hostname()
  const token = randomBytes(8).toString('hex')
  const deadline = now() + timeoutMs
  await mkdir(dirname(path), {recursive: true, mode: 0o700})

  for (;;) {
    try {
      const handle = await open(path, 'wx', 0o600)
      await handle.writeFile(`${process.pid} ${host} ${now()} ${token}\n`)
      await handle.close()
      return async () => {
        // Only remove the lock if it is still ours (it may have been broken as stale).
        const current = await readFile(path, 'utf8').catch(() => '')
        if (parseLock(current)?.token === token) await unlink(path).catch(() => {})
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new ToolgateError(
          'ERR_STORAGE',
          `cannot create lock file ${path}: ${(err as Error).message}`,
          {cause: err},
        )
      }
    }
    const holder = await inspect(path)
    if (holder && isStale(holder, host, staleMs, now)) {
      await breakLock(path, holder.text)
      continue
    }
    if (now() >= deadline) {
      throw new ToolgateError(
        'ERR_SECRET_BUSY',
        `secrets file is locked by another toolgate process${holder?.info ? ` (pid ${holder.info.pid})` : ''}; gave up after ${timeoutMs} ms (lock file ${path})`,
      )
    }
    await sleep(pollMs + Math.floor(Math.random() * pollMs))
  }
}

async function inspect(
  path: string,
): Promise<{text: string; info: LockInfo | undefined; mtimeMs: number} | undefined> {
  try {
    const [text, st] = await Promise.all([readFile(path, 'utf8'), stat(path)])
    return {text, info: parseLock(text), mtimeMs: st.mtimeMs}
  } catch {
    return undefined // vanished between attempts: just retry
  }
}

function isStale(
  holder: {info: LockInfo | undefined; mtimeMs: number},
  host: string,
  staleMs: number,
  now: () => number,
): boolean {
  // A half-written lock (no info yet) is only stale by age, so we never break one being created.
  if (holder.info && holder.info.host === host && !processAlive(holder.info.pid)) return true
  return now() - holder.mtimeMs > staleMs
}

/**
 * Moves the stale lock aside atomically and checks that what we moved is what we judged stale; if
 * another process replaced it in between, that fresh lock is put back (link fails if yet another
 * lock appeared, in which case that one wins and the moved one is dropped).
 */
async function breakLock(path: string, staleText: string): Promise<void> {
  const aside = `${path}.stale.${process.pid}.${randomBytes(4).toString('hex')}`
  try {
    await rename(path, aside)
  } catch {
    return
  }
  const moved = await readFile(aside, 'utf8').catch(() => staleText)
  if (moved !== staleText) await link(aside, path).catch(() => {})
  await unlink(aside).catch(() => {})
}
