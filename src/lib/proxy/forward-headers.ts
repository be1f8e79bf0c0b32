import {ToolgateError} from '../errors.ts'
import {isHopByHop, isProxyIdentityField} from './hop-by-hop.ts'

/** RFC 9110 §5.6.2 token: the characters a field name may use. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
/** Field values must not carry CR, LF, NUL or other controls (RFC 9110 §5.5); HTAB is allowed. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/

/**
 * Names the proxy owns: hop-by-hop fields and those that state the proxy's identity or the message
 * framing. Letting an operator set them would break framing or spoof provenance.
 */
const RESTRICTED = new Set(['host', 'content-length'])
const RESTRICTED_PREFIXES = ['proxy-']

export interface InjectedHeader {
  /** Lower-case field name. */
  name: string
  value: string
}

export function assertInjectableName(name: string, where: string): string {
  if (!TOKEN.test(name))
    throw new ToolgateError('ERR_USAGE', `${where}: "${name}" is not a valid header name`)
  const lower = name.toLowerCase()
  if (
    RESTRICTED.has(lower) ||
    isHopByHop(lower) ||
    isProxyIdentityField(lower) ||
    RESTRICTED_PREFIXES.some((p) => lower.startsWith(p))
  ) {
    throw new ToolgateError(
      'ERR_USAGE',
      `${where}: header "${name}" is managed by the proxy and cannot be injected`,
    )
  }
  return lower
}

/**
 * Parses `--remote-forward-headers Name=Value` entries: split at the first `=`, name a valid token
 * and not restricted, value without control characters. Errors name the flag and the header, never
 * the value (it may be a credential).
 */
export function parseForwardHeaders(
  entries: readonly string[],
  where = '--remote-forward-headers',
): InjectedHeader[] {
  const out = new Map<string, InjectedHeader>()
  entries.forEach((entry, i) => {
    const eq = entry.indexOf('=')
    if (eq <= 0) throw new ToolgateError('ERR_USAGE', `${where}[${i}]: expected Name=Value`)
    const rawName = entry.slice(0, eq).trim()
    const name = assertInjectableName(rawName, `${where}[${i}]`)
    const value = entry.slice(eq + 1).trim()
    if (CONTROL.test(value)) {
      throw new ToolgateError(
        'ERR_USAGE',
        `${where}[${i}]: value of "${rawName}" contains CR, LF or control characters`,
      )
    }
    out.set(name, {name, value})
  })
  return [...out.values()]
}
