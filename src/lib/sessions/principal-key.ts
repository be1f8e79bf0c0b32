import type {Principal} from '../auth/types.ts'

/**
 * Who owns caller-owned state (contract §8): the issuer and subject of the incoming token, or the
 * one anonymous principal when incoming authentication is off. Sessions, pending server→client
 * requests, per-session log levels and isolated server processes are keyed by this text.
 */
export type PrincipalKey = string

/** The one principal of a front without incoming authentication. */
export const ANONYMOUS_KEY: PrincipalKey = '-'

export function principalKey(principal: Principal | undefined): PrincipalKey {
  if (!principal) return ANONYMOUS_KEY
  const iss = principal.claims.iss
  // JSON text of a two-element array: no subject can be made to collide with another pair, nor
  // with the anonymous key.
  return JSON.stringify([typeof iss === 'string' ? iss : principal.provider, principal.subject])
}

/** The subject of a key, for logs and `list` ("anonymous" for the anonymous principal). */
export function principalLabel(key: PrincipalKey): string {
  if (key === ANONYMOUS_KEY) return 'anonymous'
  try {
    const [, subject] = JSON.parse(key) as [string, string]
    return String(subject)
  } catch {
    return '?'
  }
}

/**
 * The request field that carries the key from the proxy front to `run`'s stdio bridge over its
 * private socket. The front always drops a client-sent copy and sets its own, so the bridge can
 * trust it; base64url keeps any subject text a valid field value.
 */
export const PRINCIPAL_FIELD = 'x-toolgate-principal'

export function encodePrincipalField(key: PrincipalKey): string {
  return Buffer.from(key, 'utf8').toString('base64url')
}

export function decodePrincipalField(value: string | string[] | undefined): PrincipalKey {
  // Absent or malformed: the anonymous principal, which a front with incoming auth never sends,
  // so nothing owned by a real principal is reachable with it.
  if (typeof value !== 'string' || value === '') return ANONYMOUS_KEY
  return Buffer.from(value, 'base64url').toString('utf8') || ANONYMOUS_KEY
}
