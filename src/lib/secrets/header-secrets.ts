import {ToolgateError, isToolgateError} from '../errors.ts'
import {assertInjectableName, type InjectedHeader} from '../proxy/forward-headers.ts'
import {isControl} from './names.ts'
import type {SecretStore} from './types.ts'

export const HEADER_SECRET_FLAG = '--remote-forward-headers-secret'

export interface HeaderSecretSpec {
  header: string
  secret: string
}

/** Parses `Name=secret-name` (split at the first `=`), as `--remote-forward-headers-secret` takes it. */
export function parseHeaderSecretSpec(spec: string, where = HEADER_SECRET_FLAG): HeaderSecretSpec {
  const eq = spec.indexOf('=')
  const header = eq < 0 ? '' : spec.slice(0, eq).trim()
  const secret = eq < 0 ? '' : spec.slice(eq + 1).trim()
  if (!header || !secret)
    throw new ToolgateError(
      'ERR_USAGE',
      `${where}: expected Name=secret-name, got ${JSON.stringify(spec)}`,
    )
  return {header, secret}
}

/**
 * Resolves `--remote-forward-headers-secret Name=secret-name` once, at startup (contract §3). The
 * header name gets the same checks as `--remote-forward-headers`; a missing secret is an error naming
 * the header and the secret; a value that could split the header (RFC 9110 §5.5: CR, LF, controls
 * other than HTAB) is refused without showing it. Values are never logged.
 */
export async function resolveForwardHeaderSecrets(
  specs: readonly string[],
  store: SecretStore,
  where = HEADER_SECRET_FLAG,
): Promise<InjectedHeader[]> {
  const out = new Map<string, InjectedHeader>()
  for (const [i, raw] of specs.entries()) {
    const at = `${where}[${i}]`
    const {header, secret} = parseHeaderSecretSpec(raw, at)
    const name = assertInjectableName(header, at)
    let value: string
    try {
      value = await store.require(secret)
    } catch (err) {
      if (!isToolgateError(err)) throw err
      throw new ToolgateError(err.code, `${at} ${header}=${secret}: ${err.message}`, {
        cause: err,
        details: err.details,
      })
    }
    if ([...value].some((c) => c !== '\t' && isControl(c))) {
      throw new ToolgateError(
        'ERR_USAGE',
        `${at} ${header}=${secret}: the secret's value contains CR, LF or control characters`,
      )
    }
    out.set(name, {name, value: value.trim()})
  }
  return [...out.values()]
}

/** Headers from secrets replace plaintext `--remote-forward-headers` of the same (case-insensitive) name. */
export function overrideForwardHeaders(
  plain: readonly InjectedHeader[],
  fromSecrets: readonly InjectedHeader[],
): InjectedHeader[] {
  const merged = new Map<string, InjectedHeader>()
  for (const h of plain) merged.set(h.name.toLowerCase(), h)
  for (const h of fromSecrets) merged.set(h.name.toLowerCase(), h)
  return [...merged.values()]
}
