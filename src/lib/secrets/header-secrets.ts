import {ToolgateError, isToolgateError} from '../errors.ts'
import {isControl} from './names.ts'
import type {SecretStore} from './types.ts'

export interface HeaderSecretSpec {
  header: string
  secret: string
}

/** Parses `Name=secret-name` (split at the first `=`), as `--remote-forward-headers-secret` takes it. */
export function parseHeaderSecretSpec(spec: string, flag = '--remote-forward-headers-secret'): HeaderSecretSpec {
  const eq = spec.indexOf('=')
  const header = eq < 0 ? '' : spec.slice(0, eq).trim()
  const secret = eq < 0 ? '' : spec.slice(eq + 1).trim()
  if (!header || !secret) {
    throw new ToolgateError('ERR_USAGE', `${flag} ${JSON.stringify(spec)}: expected Name=secret-name`)
  }
  return {header, secret}
}

/**
 * Resolves header values from the secrets store once, at startup (contract §3): a missing secret is
 * an error naming the header and the secret; a value that could split the header (CR, LF, other
 * control characters, RFC 9110 §5.5) is refused without showing it. Values are never logged.
 */
export async function resolveHeaderSecrets(
  specs: readonly string[],
  store: SecretStore,
  flag = '--remote-forward-headers-secret',
): Promise<Array<{name: string; value: string}>> {
  const out: Array<{name: string; value: string}> = []
  for (const raw of specs) {
    const {header, secret} = parseHeaderSecretSpec(raw, flag)
    let value: string
    try {
      value = await store.require(secret)
    } catch (err) {
      if (isToolgateError(err)) {
        throw new ToolgateError(err.code, `${flag} ${header}=${secret}: ${err.message}`, {cause: err, details: err.details})
      }
      throw err
    }
    if ([...value].some((c) => c !== '\t' && isControl(c))) {
      throw new ToolgateError(
        'ERR_CONFIG_INVALID',
        `${flag} ${header}=${secret}: the secret's value contains control characters and cannot be a header value`,
      )
    }
    out.push({name: header, value})
  }
  return out
}
