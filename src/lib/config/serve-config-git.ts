import type {GitSourceConfig} from '../registry/types.ts'
import {Checker, join} from './checker.ts'
import {checkReadableFile, checkSecretFile} from './config-fields.ts'
import {isLoopbackHost} from '../http/loopback.ts'

/**
 * `sources[].git` (docs/registry-publish.md "Git sources"). What reaches the git command line is
 * checked here: a URL or ref starting with `-` would be read as an option, a path with `..` or a
 * leading `/` names nothing in the repository, and credentials belong in files, never in the URL.
 */
const SCHEMES = new Set(['https:', 'http:', 'ssh:', 'git:', 'file:'])
// scp-like ssh syntax: [user@]host:path
// eslint-disable-next-line no-control-regex -- control characters are what we refuse
const CONTROL = /[\u0000-\u001f\u007f]/
const SCP_LIKE = /^(?:[A-Za-z0-9._-]+@)?[A-Za-z0-9.-]+:(?!\/\/)[^\s]+$/

type GitFields = Omit<GitSourceConfig, 'name' | 'kind' | 'syncIntervalMs' | 'filter'>

export function checkGit(
  c: Checker,
  value: unknown,
  path: string,
  baseDir: string,
): GitFields | undefined {
  const o = c.object(value, path, [
    'url',
    'ref',
    'path',
    'tokenFile',
    'username',
    'sshKeyFile',
    'knownHostsFile',
  ])
  if (!o) return undefined
  const url = c.string(o.url, join(path, 'url'), {required: true, nonEmpty: true})
  let scheme: string | undefined
  if (url !== undefined) {
    // `::` is git's transport syntax (ext::, fd::): never a repository address.
    if (url.startsWith('-') || /\s/.test(url) || CONTROL.test(url) || url.includes('::'))
      c.add(join(path, 'url'), 'is not a git URL')
    else if (SCP_LIKE.test(url)) scheme = 'ssh:'
    else {
      try {
        const u = new URL(url)
        scheme = u.protocol
        if (!SCHEMES.has(u.protocol))
          c.add(join(path, 'url'), `${u.protocol} is not one of https, http, ssh, git, file`)
        else if (u.password || (u.username && u.protocol !== 'ssh:'))
          c.add(join(path, 'url'), 'must not hold credentials: use tokenFile or sshKeyFile')
        else if (u.search) c.add(join(path, 'url'), 'must not have a query')
      } catch {
        c.add(
          join(path, 'url'),
          'is not a git URL (https://…, ssh://…, git@host:path, git://…, file://…)',
        )
      }
    }
  }
  const ref = c.string(o.ref, join(path, 'ref'), {nonEmpty: true})
  if (
    ref !== undefined &&
    (ref.length > 255 || !/^[A-Za-z0-9._/][A-Za-z0-9._/-]*$/.test(ref) || ref.includes('..'))
  )
    c.add(join(path, 'ref'), 'must be a branch, tag or commit name (letters, digits, . _ / -)')
  const file = c.string(o.path, join(path, 'path'), {required: true, nonEmpty: true})
  if (
    file !== undefined &&
    (file.startsWith('/') ||
      file.length > 1024 ||
      CONTROL.test(file) ||
      file.split('/').some((seg) => seg === '..' || seg === ''))
  )
    c.add(
      join(path, 'path'),
      'must be a relative path inside the repository (no "..", no leading "/")',
    )
  const tokenFile = checkReadableFile(c, o.tokenFile, join(path, 'tokenFile'), baseDir)
  if (tokenFile) checkSecretFile(c, tokenFile, join(path, 'tokenFile'), join(path, 'tokenFile'))
  const username = c.string(o.username, join(path, 'username'), {nonEmpty: true})
  const sshKeyFile = checkReadableFile(c, o.sshKeyFile, join(path, 'sshKeyFile'), baseDir)
  const knownHostsFile = checkReadableFile(
    c,
    o.knownHostsFile,
    join(path, 'knownHostsFile'),
    baseDir,
  )
  if (tokenFile && scheme !== 'https:' && scheme !== 'http:')
    c.add(join(path, 'tokenFile'), 'is for https:// URLs (use sshKeyFile for ssh)')
  // A token over plain http is readable by anyone on the way; loopback is the only exception.
  if (tokenFile && scheme === 'http:' && url !== undefined && !isLoopbackUrl(url))
    c.add(
      join(path, 'tokenFile'),
      'needs an https:// URL (a token over http is readable on the way)',
    )
  if (sshKeyFile) checkSecretFile(c, sshKeyFile, join(path, 'sshKeyFile'), join(path, 'sshKeyFile'))
  if ((sshKeyFile || knownHostsFile) && scheme !== 'ssh:')
    c.add(join(path, sshKeyFile ? 'sshKeyFile' : 'knownHostsFile'), 'is for ssh URLs')
  if (username !== undefined && !tokenFile) c.add(join(path, 'username'), 'needs tokenFile')
  if (url === undefined || file === undefined) return undefined
  return {
    url,
    path: file,
    ...(ref !== undefined ? {ref} : {}),
    ...(tokenFile ? {tokenFile} : {}),
    ...(username !== undefined ? {username} : {}),
    ...(sshKeyFile ? {sshKeyFile} : {}),
    ...(knownHostsFile ? {knownHostsFile} : {}),
  }
}

function isLoopbackUrl(url: string): boolean {
  try {
    return isLoopbackHost(new URL(url).hostname)
  } catch {
    return false
  }
}
