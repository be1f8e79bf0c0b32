import {constants} from 'node:fs'
import {randomBytes} from 'node:crypto'
import {copyFile, mkdir, open, readFile, readlink, realpath, stat, unlink} from 'node:fs/promises'
import {basename, dirname, join, resolve} from 'node:path'
import {ToolgateError} from '../errors.ts'
import {atomicWriteFile} from '../fs/atomic-write.ts'
import {pidAlive} from '../workloads/state.ts'

/**
 * Safe edits of another program's config file: one writer at a time (a lock file next to it),
 * the user's file copied once before toolgate first changes it, the new text written to a temp
 * file and renamed over the old (a reader never sees half a file), with the old file's mode.
 */

const LOCK_WAIT_MS = 5_000
// A lock older than this whose owner cannot be checked is taken to be left over from a crash.
const STALE_MS = 30_000

export interface ConfigText {
  /** The real file (a symlink — dotfile managers use them — is followed, never replaced). */
  path: string
  /** Undefined when the file does not exist yet. */
  text: string | undefined
  mode: number | undefined
}

/**
 * The file a config path really is: symlinks followed, also a dangling one (a dotfiles link whose
 * target is not written yet), so the lock, the ownership records and the write all name one file.
 */
export async function resolveConfigPath(file: string): Promise<string> {
  let path = file
  for (let hops = 0; hops < 16; hops++) {
    try {
      return await realpath(path)
    } catch {
      // Missing: a dangling link is followed by hand; anything else is the path itself.
    }
    let target: string
    try {
      target = await readlink(path)
    } catch {
      // Not a link: its folder may be one (realpath of the folder keeps names consistent).
      const dir = await realpath(dirname(path)).catch(() => dirname(path))
      return join(dir, basename(path))
    }
    path = resolve(dirname(path), target)
  }
  throw new ToolgateError('ERR_FILE_UNREADABLE', `${file}: too many levels of symbolic links`)
}

export async function readConfigText(file: string): Promise<ConfigText> {
  const path = await resolveConfigPath(file)
  try {
    const [text, info] = await Promise.all([readFile(path, 'utf8'), stat(path)])
    if (!info.isFile()) throw new Error('not a regular file')
    return {path, text, mode: info.mode & 0o777}
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      return {path, text: undefined, mode: undefined}
    throw new ToolgateError('ERR_FILE_UNREADABLE', `${file}: ${(err as Error).message}`)
  }
}

/** Replaces the file's text; the first change toolgate makes keeps the original as `.toolgate-backup`. */
export async function writeConfigText(config: ConfigText, text: string): Promise<void> {
  if (config.text !== undefined) {
    // COPYFILE_EXCL: the backup is the user's own file, taken once, never overwritten later.
    await copyFile(config.path, backupPath(config.path), constants.COPYFILE_EXCL).catch(
      (err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err
      },
    )
  }
  // New files are private: a client config may come to hold tokens the user adds later.
  await atomicWriteFile(config.path, text, {mode: config.mode ?? 0o600, dirMode: 0o755})
}

export function backupPath(path: string): string {
  return `${path}.toolgate-backup`
}

/** Runs `work` holding the file's lock; a second toolgate waits up to 5 s, then gives up. */
export async function withFileLock<T>(file: string, work: () => Promise<T>): Promise<T> {
  const lock = `${file}.toolgate-lock`
  // Our own token in the lock: it is released only while it is still ours.
  const token = `${process.pid} ${randomBytes(8).toString('hex')}`
  const deadline = Date.now() + LOCK_WAIT_MS
  for (;;) {
    try {
      const handle = await open(lock, 'wx', 0o600)
      await handle.writeFile(token)
      await handle.close()
      break
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOENT') {
        // The folder does not exist yet: nothing else can be writing the file.
        await mkdir(dirname(file), {recursive: true, mode: 0o755})
        continue
      }
      if (code !== 'EEXIST') throw err
      if (await staleLock(lock)) {
        await breakStaleLock(lock)
        continue
      }
      if (Date.now() > deadline)
        throw new ToolgateError(
          'ERR_CONFLICT',
          `${file} is being changed by another toolgate (lock ${lock}); try again, or remove the lock if no toolgate is running`,
        )
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  try {
    return await work()
  } finally {
    if ((await readFile(lock, 'utf8').catch(() => '')) === token)
      await unlink(lock).catch(() => undefined)
  }
}

/**
 * Removes a stale lock, one waiter at a time. Judging a lock stale and removing it are two steps:
 * waiters that each judged and then removed (or renamed) `lock` could take away a fresh lock
 * another waiter created in between, and two of them would then write at once. So removal
 * happens only under a second exclusive file, the breaker, after judging again: under it nobody
 * else removes a lock, and no fresh lock can appear while the stale one is still there.
 */
async function breakStaleLock(lock: string): Promise<void> {
  const breaker = `${lock}.break`
  let handle
  try {
    handle = await open(breaker, 'wx', 0o600)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    // Another waiter is breaking it. A breaker left by a crash is cleared once it is old.
    const age = await stat(breaker).then(
      (st) => Date.now() - st.mtimeMs,
      () => 0,
    )
    if (age > STALE_MS) await unlink(breaker).catch(() => undefined)
    await new Promise((r) => setTimeout(r, 10))
    return
  }
  try {
    await handle.writeFile(String(process.pid))
    await handle.close()
    if (await staleLock(lock)) await unlink(lock).catch(() => undefined)
  } finally {
    await unlink(breaker).catch(() => undefined)
  }
}

async function staleLock(lock: string): Promise<boolean> {
  try {
    const pid = Number((await readFile(lock, 'utf8')).trim().split(' ')[0])
    if (Number.isInteger(pid) && pid > 0) return !pidAlive(pid)
    return Date.now() - (await stat(lock)).mtimeMs > STALE_MS
  } catch {
    return false
  }
}
