import type {ReasonCode} from './reasons.ts'

/**
 * Claim checks shared by JWT and introspection results (contract §1 "JWT", §2): `iss` byte-equal to
 * the configured issuer, `aud` equal to or containing the audience, `exp` required and in the
 * future, `nbf` not in the future, `sub` a non-empty string. Returns the reason for a rejection
 * (for logs, never sent to the client) or undefined when every check passes.
 */
export interface ClaimRules {
  /** Configured issuer; empty means "no issuer configured" (proxy with only a JWKS URL). */
  issuer: string
  audience?: string | undefined
  /** Seconds since the epoch. */
  now: number
  /** When false, a missing `iss` passes (RFC 7662 §2.2 makes `iss` optional in introspection). */
  requireIss: boolean
}

export type ClaimCheck =
  {ok: true} | {ok: false; reason: string; code: ReasonCode; expired?: boolean}

export function checkClaims(claims: Record<string, unknown>, rules: ClaimRules): ClaimCheck {
  const {iss, aud, exp, nbf, sub} = claims
  if (rules.issuer !== '') {
    if (iss === undefined) {
      if (rules.requireIss) return {ok: false, reason: 'iss missing', code: 'iss_missing'}
    } else if (iss !== rules.issuer) {
      return {ok: false, reason: 'iss does not match the provider issuer', code: 'iss_mismatch'}
    }
  }
  if (rules.audience !== undefined) {
    const list = Array.isArray(aud) ? aud : [aud]
    if (!list.some((a) => a === rules.audience))
      return {ok: false, reason: 'aud does not contain the expected audience', code: 'aud_mismatch'}
  }
  if (typeof exp !== 'number' || !Number.isFinite(exp))
    return {
      ok: false,
      reason: 'exp missing or not a number',
      code: exp === undefined ? 'exp_missing' : 'exp_invalid',
    }
  if (exp <= rules.now) return {ok: false, reason: 'token expired', code: 'expired', expired: true}
  if (nbf !== undefined) {
    if (typeof nbf !== 'number' || !Number.isFinite(nbf))
      return {ok: false, reason: 'nbf not a number', code: 'nbf_invalid'}
    if (nbf > rules.now) return {ok: false, reason: 'token not yet valid (nbf)', code: 'nbf_future'}
  }
  if (typeof sub !== 'string' || sub === '')
    return {ok: false, reason: 'sub missing or empty', code: 'sub_missing'}
  return {ok: true}
}
