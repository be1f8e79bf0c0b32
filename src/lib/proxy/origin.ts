import {ToolgateError} from '../errors.ts'

/**
 * Origin allowlist (contract §3; MCP transports spec "Security Warning": servers must validate
 * Origin to stop DNS rebinding). Exact match after normalising scheme and host to lower case;
 * the port is compared verbatim (`http://a:80` and `http://a` are different entries).
 */
export type OriginDecision = {ok: true} | {ok: false; reason: string}

export interface OriginPolicy {
  /** undefined: no check (non-loopback bind without a list). */
  readonly allowed: ReadonlySet<string> | undefined
  check(values: readonly string[] | undefined): OriginDecision
}

/** `scheme://host[:port]` with scheme and host lower-cased; undefined when it is not an origin. */
export function normaliseOrigin(text: string): string | undefined {
  if (text === 'null') return 'null'
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(\[[0-9A-Fa-f:.]+\]|[^\s/:?#@[\]]+)(?::(\d+))?$/.exec(
    text,
  )
  if (!m) return undefined
  const scheme = (m[1] as string).toLowerCase()
  const host = (m[2] as string).toLowerCase()
  return m[3] === undefined ? `${scheme}://${host}` : `${scheme}://${host}:${m[3]}`
}

/** The default list for a loopback bind: the three names a local browser can use for it. */
export function loopbackOrigins(port: number): string[] {
  return [`http://localhost:${port}`, `http://127.0.0.1:${port}`, `http://[::1]:${port}`]
}

export function parseAllowedOrigins(
  list: readonly string[],
  where = '--allowed-origins',
): string[] {
  return list.map((entry) => {
    const n = normaliseOrigin(entry.trim())
    if (n === undefined) {
      throw new ToolgateError(
        'ERR_USAGE',
        `${where}: "${entry}" is not an origin (use scheme://host[:port] or null)`,
      )
    }
    return n
  })
}

export function createOriginPolicy(allowed: readonly string[] | undefined): OriginPolicy {
  const set = allowed === undefined ? undefined : new Set(allowed)
  return {
    allowed: set,
    check(values) {
      if (values === undefined || values.length === 0) return {ok: true}
      // Two Origin fields cannot both be "the" origin (RFC 6454 §7.3 allows exactly one).
      if (values.length > 1) return {ok: false, reason: 'more than one Origin header'}
      if (set === undefined) return {ok: true}
      const n = normaliseOrigin(values[0] as string)
      if (n !== undefined && set.has(n)) return {ok: true}
      return {ok: false, reason: 'origin not in allowlist'}
    },
  }
}

/** The exact 403 body of contract §3. */
export const ORIGIN_REJECTED_BODY =
  '{"jsonrpc":"2.0","error":{"code":-32600,"message":"Origin not allowed"}}'
