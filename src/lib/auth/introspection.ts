import {basicAuthorization} from '../http/basic-auth.ts'
import type {JsonResponse} from '../http/outbound.ts'
import {checkClaims, type ClaimCheck} from './claims.ts'
import type {ReasonCode} from './reasons.ts'

/**
 * RFC 7662 token introspection, as a request builder and a response check (the I/O lives in the
 * provider validator), so the check is testable with plain values.
 */
export interface IntrospectionCredentials {
  clientId?: string | undefined
  clientSecret?: string | undefined
  /** Used when no client secret is configured (RFC 7662 §2.1 allows a bearer credential). */
  bearer?: string | undefined
}

export function introspectionRequest(
  token: string,
  creds: IntrospectionCredentials,
): {headers: Record<string, string>; body: string} {
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'application/json',
  }
  const params = new URLSearchParams({token, token_type_hint: 'access_token'})
  if (creds.clientId !== undefined && creds.clientSecret !== undefined) {
    headers.authorization = basicAuthorization(creds.clientId, creds.clientSecret)
  } else if (creds.bearer !== undefined) {
    headers.authorization = `Bearer ${creds.bearer}`
    if (creds.clientId !== undefined) params.set('client_id', creds.clientId)
  } else if (creds.clientId !== undefined) {
    params.set('client_id', creds.clientId)
  }
  return {headers, body: params.toString()}
}

export type IntrospectionVerdict =
  | {kind: 'accept'; claims: Record<string, unknown>}
  | {
      kind: 'reject'
      reason: string
      code: ReasonCode
      expired?: boolean
      /** The answer's non-secret facts, for `auth explain` (never logged). */
      answer?: IntrospectionAnswer
    }
  | {kind: 'unavailable'; reason: string}

export interface IntrospectionAnswer {
  active: unknown
  aud?: unknown
  exp?: unknown
  iss?: unknown
  token_type?: unknown
  sub?: unknown
}

function answerOf(claims: Record<string, unknown>): IntrospectionAnswer {
  const {active, aud, exp, iss, token_type, sub} = claims
  return {active, aud, exp, iss, token_type, sub}
}

/** Token types that are not a bearer access token (a refresh token must never pass as one). */
const ACCEPTED_TOKEN_TYPES = new Set([
  'bearer',
  'access_token',
  'urn:ietf:params:oauth:token-type:access_token',
])

export function processIntrospectionResponse(
  res: JsonResponse,
  rules: {issuer: string; audience?: string | undefined; now: number},
): IntrospectionVerdict {
  if (res.status !== 200)
    return {kind: 'unavailable', reason: `introspection answered HTTP ${res.status}`}
  const body = res.body
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return {
      kind: 'unavailable',
      reason: 'introspection answered something other than a JSON object',
    }
  }
  const claims = body as Record<string, unknown>
  // RFC 7662 §2.2: `active` is a boolean; anything but literal true is inactive.
  if (claims.active !== true)
    return {
      kind: 'reject',
      reason: 'introspection: token not active',
      code: 'inactive',
      answer: answerOf(claims),
    }
  if (
    claims.token_type !== undefined &&
    !ACCEPTED_TOKEN_TYPES.has(String(claims.token_type).toLowerCase())
  ) {
    return {
      kind: 'reject',
      reason: 'introspection: not a bearer access token',
      code: 'not_access_token',
      answer: answerOf(claims),
    }
  }
  const check: ClaimCheck = checkClaims(claims, {...rules, requireIss: false})
  if (!check.ok)
    return {
      kind: 'reject',
      reason: 'introspection: ' + check.reason,
      code: check.code,
      answer: answerOf(claims),
      ...(check.expired ? {expired: true} : {}),
    }
  return {kind: 'accept', claims}
}
