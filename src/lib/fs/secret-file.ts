import {readFileSync, statSync} from 'node:fs'
import {ToolgateError} from '../errors.ts'

/**
 * The one reader of secret files (client secrets, bearer tokens, service-account tokens). What it
 * guarantees to every caller:
 *
 * - The content is trimmed (editors and `echo` add a newline that is not part of the secret).
 * - An empty file, a non-regular file (a directory, or a FIFO that would block startup) and a file
 *   larger than 64 KiB (not a secret; most likely the wrong path) are ERR_CONFIG_INVALID; a file
 *   that cannot be read is ERR_FILE_UNREADABLE. Never an empty credential, never a silent default.
 * - Errors name `what` the file is for and its path, and the errno code, but never any content.
 *
 * Permissions are NOT checked: Kubernetes mounts Secrets and projected service-account tokens 0644
 * by default, so refusing or warning on group/world-readable files would fail or nag exactly the
 * deployments that rotate tokens properly. The files toolgate itself writes are 0600 (atomic-write).
 */
export interface SecretFileOptions {
  /** What the file is for, as the user knows it: a flag (`--x-file`) or a field path. */
  what: string
}

const MAX_BYTES = 64 * 1024

export function readSecretFile(path: string, options: SecretFileOptions): string {
  const {what} = options
  let text: string
  try {
    // Check the kind before reading: reading a FIFO blocks until a writer appears.
    const stat = statSync(path)
    if (!stat.isFile()) throw invalid(what, `${path} is not a regular file`, path)
    if (stat.size > MAX_BYTES)
      throw invalid(what, `${path} is larger than ${MAX_BYTES / 1024} KiB`, path)
    text = readFileSync(path, 'utf8').trim()
  } catch (err) {
    if (err instanceof ToolgateError) throw err
    throw unreadable(what, path, err)
  }
  if (text === '') throw invalid(what, `${path} is empty`, path)
  return text
}

function invalid(what: string, problem: string, path: string): ToolgateError {
  return new ToolgateError('ERR_CONFIG_INVALID', `${what}: ${problem}`, {details: {path}})
}

function unreadable(what: string, path: string, err: unknown): ToolgateError {
  const code = (err as NodeJS.ErrnoException).code
  const why = code === undefined ? 'error' : (ERRNO_TEXT[code] ?? code)
  return new ToolgateError('ERR_FILE_UNREADABLE', `${what}: cannot read ${path} (${why})`, {
    cause: err,
    details: {path},
  })
}

const ERRNO_TEXT: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EISDIR: 'is a directory',
  ENOTDIR: 'a parent is not a directory',
}

/**
 * A secret file that is re-read when it changes (projected Kubernetes service-account tokens are
 * rotated in place by the kubelet). The mtime/size/inode check is one stat per use, and uses only
 * happen on outbound calls to a provider, which are rare. A file that turns unreadable or empty
 * keeps the last good value rather than sending no credential at all.
 */
export interface RotatingSecret {
  get(): string
}

export function rotatingSecretFile(path: string, options: SecretFileOptions): RotatingSecret {
  let value = readSecretFile(path, options)
  let stamp = stampOf(path)
  return {
    get() {
      const now = stampOf(path)
      if (now !== undefined && now !== stamp) {
        try {
          value = readSecretFile(path, options)
          stamp = now
        } catch {
          // keep the last good value; the next call tries again
        }
      }
      return value
    },
  }
}

function stampOf(path: string): string | undefined {
  try {
    const s = statSync(path, {bigint: true})
    return `${s.mtimeNs}:${s.size}:${s.ino}`
  } catch {
    return undefined
  }
}
