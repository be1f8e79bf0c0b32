import {ALLOWED_ALGORITHMS} from '../provider-validator.ts'
import type {ReasonCode} from '../reasons.ts'
import type {ProviderConfig} from '../types.ts'
import type {DecodedToken} from './decode.ts'
import {relative} from './decode.ts'

export type CheckStatus = 'pass' | 'fail' | 'skip' | 'info'

/** One line of `auth explain`: `id` is stable for scripts (docs/troubleshooting.md). */
export interface Check {
  id: string
  status: CheckStatus
  detail: string
  /** The reason code this check refuses with (only on `fail`). */
  code?: ReasonCode
  expected?: unknown
  found?: unknown
}

/**
 * The order jose and the shared claim rules (claims.ts) apply the offline checks, so that when
 * several fail, `--offline` reports the code the server would: jose checks the algorithm, then the
 * presence of iss/aud/exp, then iss and aud values, then iat/nbf/exp; `sub` comes last (claims.ts).
 */
export const CODE_ORDER: ReasonCode[] = [
  'alg_not_allowed',
  'iss_missing',
  'aud_missing',
  'exp_missing',
  'iss_mismatch',
  'aud_mismatch',
  'iat_invalid',
  'nbf_invalid',
  'nbf_future',
  'exp_invalid',
  'expired',
  'sub_missing',
]

const show = (v: unknown) => (v === undefined ? '(absent)' : JSON.stringify(v))
const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v)

/**
 * The checks that need no network, for one provider the token's `iss` selected, by the same rules
 * as provider-validator.ts (jose options) and claims.ts: asymmetric `alg`, `iss` byte-equal,
 * `aud` equal to or containing the audience, `exp` required and in the future with no leeway,
 * `nbf` not in the future, `iat` a number when present, `sub` a non-empty string.
 */
export function offlineChecks(p: ProviderConfig, token: DecodedToken, now: number): Check[] {
  const h = token.header ?? {alg: undefined, kid: undefined, typ: undefined}
  const c = token.claims ?? {
    iss: undefined,
    sub: undefined,
    aud: undefined,
    exp: undefined,
    nbf: undefined,
    iat: undefined,
  }
  const checks: Check[] = []
  const add = (check: Check) => checks.push(check)

  const algOk = typeof h.alg === 'string' && ALLOWED_ALGORITHMS.includes(h.alg)
  add(
    algOk
      ? {id: 'alg', status: 'pass', detail: `alg ${h.alg} is an allowed asymmetric algorithm`}
      : {
          id: 'alg',
          status: 'fail',
          code: 'alg_not_allowed',
          detail: `alg ${show(h.alg)} is not allowed (only ${ALLOWED_ALGORITHMS.join(', ')}; none and HS* never verify)`,
          found: h.alg,
        },
  )
  add({
    id: 'kid',
    status: 'info',
    detail: h.kid === undefined ? 'no kid in the header' : `kid ${show(h.kid)}`,
    found: h.kid,
  })

  if (p.issuerUrl === '') {
    add({id: 'iss', status: 'pass', detail: 'no issuer configured: any iss is accepted'})
  } else if (c.iss === undefined) {
    add({
      id: 'iss',
      status: 'fail',
      code: 'iss_missing',
      detail: 'the token has no iss',
      expected: p.issuerUrl,
    })
  } else {
    const same = c.iss === p.issuerUrl
    add({
      id: 'iss',
      status: same ? 'pass' : 'fail',
      ...(same ? {} : {code: 'iss_mismatch' as const}),
      detail: same
        ? `iss ${show(c.iss)} is byte-equal to issuerUrl`
        : `iss ${show(c.iss)} ≠ issuerUrl ${show(p.issuerUrl)}`,
      expected: p.issuerUrl,
      found: c.iss,
    })
  }

  if (p.audience === undefined) {
    add({
      id: 'aud',
      status: 'pass',
      detail: 'no audience configured: any aud is accepted',
      found: c.aud,
    })
  } else if (c.aud === undefined) {
    add({
      id: 'aud',
      status: 'fail',
      code: 'aud_missing',
      detail: `the token has no aud (expected ${show(p.audience)})`,
      expected: p.audience,
    })
  } else {
    const list = Array.isArray(c.aud) ? c.aud : [c.aud]
    const ok = list.some((a) => a === p.audience)
    add({
      id: 'aud',
      status: ok ? 'pass' : 'fail',
      ...(ok ? {} : {code: 'aud_mismatch' as const}),
      detail: ok
        ? `aud ${show(c.aud)} contains ${show(p.audience)}`
        : `aud ${show(c.aud)} does not contain ${show(p.audience)}`,
      expected: p.audience,
      found: c.aud,
    })
  }

  if (c.exp === undefined) {
    add({id: 'exp', status: 'fail', code: 'exp_missing', detail: 'the token has no exp (required)'})
  } else if (!isNumber(c.exp)) {
    add({
      id: 'exp',
      status: 'fail',
      code: 'exp_invalid',
      detail: `exp ${show(c.exp)} is not a number`,
      found: c.exp,
    })
  } else {
    const ok = c.exp > now
    add({
      id: 'exp',
      status: ok ? 'pass' : 'fail',
      ...(ok ? {} : {code: 'expired' as const}),
      detail: `${ok ? 'expires' : 'expired'} ${relative(c.exp, now)} (exp ${new Date(c.exp * 1000).toISOString()}; no clock leeway)`,
      found: c.exp,
    })
  }

  if (c.nbf === undefined) {
    add({id: 'nbf', status: 'pass', detail: 'no nbf'})
  } else if (!isNumber(c.nbf)) {
    add({
      id: 'nbf',
      status: 'fail',
      code: 'nbf_invalid',
      detail: `nbf ${show(c.nbf)} is not a number`,
      found: c.nbf,
    })
  } else {
    const ok = c.nbf <= now
    add({
      id: 'nbf',
      status: ok ? 'pass' : 'fail',
      ...(ok ? {} : {code: 'nbf_future' as const}),
      detail: `${ok ? 'valid since' : 'not valid until'} ${relative(c.nbf, now)} (nbf ${new Date(c.nbf * 1000).toISOString()}; no clock leeway)`,
      found: c.nbf,
    })
  }

  if (c.iat === undefined) {
    add({id: 'iat', status: 'pass', detail: 'no iat'})
  } else if (!isNumber(c.iat)) {
    add({
      id: 'iat',
      status: 'fail',
      code: 'iat_invalid',
      detail: `iat ${show(c.iat)} is not a number`,
      found: c.iat,
    })
  } else {
    add({
      id: 'iat',
      status: 'pass',
      detail: `issued ${relative(c.iat, now)}${c.iat > now ? ' (in the future: a clock is off, but iat is not refused)' : ''}`,
      found: c.iat,
    })
  }

  const subOk = typeof c.sub === 'string' && c.sub !== ''
  add(
    subOk
      ? {id: 'sub', status: 'pass', detail: `sub ${show(c.sub)}`, found: c.sub}
      : {
          id: 'sub',
          status: 'fail',
          code: 'sub_missing',
          detail: `sub ${show(c.sub)} is not a non-empty string`,
          found: c.sub,
        },
  )
  return checks
}

/** The code the server would report when several offline checks fail (see CODE_ORDER). */
export function firstFailure(checks: Check[]): Check | undefined {
  const fails = checks.filter((c) => c.status === 'fail' && c.code !== undefined)
  fails.sort((a, b) => CODE_ORDER.indexOf(a.code!) - CODE_ORDER.indexOf(b.code!))
  return fails[0]
}
