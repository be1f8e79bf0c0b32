import {readFileSync, statSync} from 'node:fs'
import {ToolgateError} from '../errors.ts'

/**
 * Reads a secret file once at startup (contract §1: unreadable → startup error naming the
 * provider). Content is trimmed; an empty file is an error, never an empty credential.
 */
export function readSecretFile(path: string, what: string): string {
  let text: string
  try {
    text = readFileSync(path, 'utf8').trim()
  } catch (err) {
    throw new ToolgateError('ERR_FILE_UNREADABLE', `${what}: ${path} cannot be read`, {cause: err, details: {path}})
  }
  if (text === '') throw new ToolgateError('ERR_CONFIG_INVALID', `${what}: ${path} is empty`, {details: {path}})
  return text
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

export function rotatingSecretFile(path: string, what: string): RotatingSecret {
  let value = readSecretFile(path, what)
  let stamp = stampOf(path)
  return {
    get() {
      const now = stampOf(path)
      if (now !== undefined && now !== stamp) {
        try {
          value = readSecretFile(path, what)
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
