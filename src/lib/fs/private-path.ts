import {closeSync, constants, fchmodSync, fstatSync, mkdirSync, openSync, statSync} from 'node:fs'
import {dirname, resolve, sep} from 'node:path'
import {ToolgateError} from '../errors.ts'

/**
 * toolgate's own state and log files (workload state, server and proxy logs) must not be
 * readable, writable or redirectable by another local user (issue 30, finding 6):
 *
 * - files are opened with O_NOFOLLOW, so a symlink planted at a log path is refused instead of
 *   written through, and must be regular files owned by this user; mode 0600 is enforced on the
 *   open descriptor (fchmod), so a file left 0666 is tightened, not kept;
 * - directories toolgate creates are 0700; an existing one that is group/world-writable or owned
 *   by another user is refused with the command that fixes it (toolgate does not chmod a
 *   directory it did not create: the user may have meant it).
 *
 * POSIX only: on Windows files inherit the profile directory's ACL.
 */

const POSIX = process.platform !== 'win32'

function unsafe(message: string, path: string): ToolgateError {
  return new ToolgateError('ERR_UNSAFE_PATH', message, {details: {path}})
}

/**
 * Creates `dir` (0700) and checks it and every directory between it and `top` (toolgate's own
 * root, e.g. `$XDG_STATE_HOME/toolgate`): each must be a directory owned by this user (or root)
 * and writable by nobody else.
 */
export function ensurePrivateDir(dir: string, top: string): void {
  mkdirSync(dir, {recursive: true, mode: 0o700})
  if (!POSIX) return
  const stop = resolve(top)
  for (let p = resolve(dir); ; p = dirname(p)) {
    checkDir(p)
    if (p === stop || !p.startsWith(stop + sep)) break
  }
}

function checkDir(path: string): void {
  const s = statSync(path)
  if (!s.isDirectory()) throw unsafe(`${path} is not a directory`, path)
  const uid = process.getuid!()
  if (s.uid !== uid && s.uid !== 0)
    throw unsafe(
      `${path} belongs to another user (uid ${s.uid}); toolgate keeps its state only in directories of its own user`,
      path,
    )
  if ((s.mode & 0o022) !== 0)
    throw unsafe(
      `${path} is writable by other users (mode ${(s.mode & 0o777).toString(8).padStart(4, '0')}); run 'chmod 700 ${path}'`,
      path,
    )
}

/**
 * Opens a private file for appending (created 0600): never through a symlink, only a regular file
 * of this user, and 0600 whatever mode it had. Returns the descriptor.
 */
export function openPrivateAppend(path: string): number {
  const flags =
    constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | (POSIX ? constants.O_NOFOLLOW : 0)
  let fd: number
  try {
    fd = openSync(path, flags, 0o600)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOOP')
      throw unsafe(`${path} is a symbolic link; refusing to write through it (remove it)`, path)
    throw err
  }
  if (!POSIX) return fd
  try {
    const s = fstatSync(fd)
    if (!s.isFile()) throw unsafe(`${path} is not a regular file`, path)
    if (s.uid !== process.getuid!())
      throw unsafe(`${path} belongs to another user (uid ${s.uid})`, path)
    if ((s.mode & 0o777) !== 0o600) fchmodSync(fd, 0o600)
  } catch (err) {
    closeSync(fd)
    throw err
  }
  return fd
}

/** The directory of a private file, checked up to `top` (see ensurePrivateDir). */
export function ensurePrivateParent(file: string, top: string): void {
  ensurePrivateDir(dirname(file), top)
}
