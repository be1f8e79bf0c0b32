import {readFileSync} from 'node:fs'
import {isToolgateError} from '../errors.ts'
import {parseAuthzConfigText, validateAuthzConfig, type AuthzConfig} from '../authz/policy-file.ts'
import type {Checker} from './checker.ts'
import {checkReadableFile} from './config-fields.ts'

/**
 * `auth.authz` (docs/registry-authz.md): the Cedar policy that decides who sees which servers.
 * Either `policyFile` (the proxy's `--authz-config` format, reloaded when it changes) or `cedar`
 * inline (the same object as that file's `cedar`). A policy that does not parse refuses the whole
 * configuration, naming the policy's index and the parser's message.
 */
export type RegistryAuthzSpec = {kind: 'file'; path: string} | {kind: 'inline'; config: AuthzConfig}

export function checkRegistryAuthz(
  c: Checker,
  value: unknown,
  baseDir: string,
): RegistryAuthzSpec | undefined {
  if (value === undefined || value === null) return undefined
  const o = c.object(value, 'auth.authz', ['policyFile', 'cedar'])
  if (!o) return undefined
  if ((o.policyFile === undefined) === (o.cedar === undefined)) {
    c.add('auth.authz', 'set exactly one of "policyFile" (a policy file) or "cedar" (inline)')
    return undefined
  }
  if (o.cedar !== undefined) {
    try {
      return {
        kind: 'inline',
        config: validateAuthzConfig({version: '1.0', type: 'cedarv1', cedar: o.cedar}),
      }
    } catch (err) {
      if (!isToolgateError(err)) throw err
      // The validator names paths from the file's root (`cedar.policies[0]: …`).
      c.add(`auth.authz.${String(err.details?.path ?? 'cedar')}`, stripPath(err.message))
      return undefined
    }
  }
  const path = checkReadableFile(c, o.policyFile, 'auth.authz.policyFile', baseDir)
  if (path === undefined) return undefined
  try {
    parseAuthzConfigText(readFileSync(path, 'utf8'), path)
  } catch (err) {
    if (!isToolgateError(err)) throw err
    c.add('auth.authz.policyFile', err.message)
    return undefined
  }
  return {kind: 'file', path}
}

function stripPath(message: string): string {
  const colon = message.indexOf(': ')
  return colon === -1 ? message : message.slice(colon + 2)
}
