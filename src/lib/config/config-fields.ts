import {accessSync, constants, statSync} from 'node:fs'
import {isAbsolute, join as joinPath} from 'node:path'
import {isToolgateError} from '../errors.ts'
import {readSecretFile} from '../fs/secret-file.ts'
import {isLoopbackHost} from '../http/loopback.ts'
import {Checker} from './checker.ts'

/** Field checks shared by the sections of the serve configuration: URLs and readable files. */
export function absPath(p: string, baseDir: string): string {
  return isAbsolute(p) ? p : joinPath(baseDir, p)
}
export function checkUrl(
  c: Checker,
  value: unknown,
  path: string,
  opts: {required?: boolean; httpsUnlessLoopback?: boolean} = {},
) {
  const s = c.string(value, path, {required: opts.required})
  if (s === undefined) return undefined
  let url: URL
  try {
    url = new URL(s)
  } catch {
    // Echo the value only when it cannot hold credentials (user:password@host).
    c.add(path, s.includes('@') ? 'is not a valid URL' : `"${s}" is not a valid URL`)
    return undefined
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    c.add(path, `must be an http(s) URL, got ${url.protocol}`)
    return undefined
  }
  if (url.username || url.password) {
    c.add(path, 'must not carry credentials in the URL')
    return undefined
  }
  if (opts.httpsUnlessLoopback && url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    c.add(
      path,
      `must use https (plain http is allowed only for loopback hosts, got host ${url.hostname})`,
    )
    return undefined
  }
  return s
}
export function checkReadableFile(
  c: Checker,
  value: unknown,
  path: string,
  baseDir: string,
  owner?: string,
): string | undefined {
  const s = c.string(value, path, {nonEmpty: true})
  if (s === undefined) return undefined
  const abs = absPath(s, baseDir)
  const who = owner ? `${owner}: ` : ''
  try {
    if (!statSync(abs).isFile()) {
      c.add(path, `${who}${abs} is not a regular file`)
      return undefined
    }
    accessSync(abs, constants.R_OK)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    c.add(
      path,
      `${who}cannot read ${abs} (${code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code})`,
    )
    return undefined
  }
  return abs
}

/**
 * A secret file that checkReadableFile already found readable: read it the way the server will at
 * startup (trimmed; empty, oversized or non-regular refused), so `serve --check-config` reports the
 * same problems. The problem goes to the checker under `path`; the content is never kept.
 */
export function checkSecretFile(c: Checker, abs: string, path: string, owner: string): void {
  try {
    readSecretFile(abs, {what: owner})
  } catch (err) {
    if (!isToolgateError(err)) throw err
    c.add(path, err.message)
  }
}
