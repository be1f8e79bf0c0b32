import type {IncomingMessage} from 'node:http'

/**
 * Parses the Authorization header exactly as contract §1 demands: `Bearer <token>`, scheme
 * case-sensitive, one space, no quotes. The token must match RFC 6750 §2.1 `b68token`
 * (`1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`), so quoted or padded
 * variants are header problems (`invalid_request`), not token problems.
 */
export type HeaderResult =
  | {ok: true; token: string}
  | {
      ok: false
      description: string
      reason: 'header_missing' | 'header_malformed' | 'header_multiple'
    }

const B68TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/

export const HEADER_DESCRIPTIONS = {
  missing: 'missing bearer token',
  malformed: 'malformed Authorization header (expected: Bearer <token>)',
  multiple: 'multiple Authorization headers',
} as const

export function parseAuthorization(value: string | readonly string[] | undefined): HeaderResult {
  if (value === undefined)
    return {ok: false, description: HEADER_DESCRIPTIONS.missing, reason: 'header_missing'}
  if (typeof value !== 'string') {
    // RFC 6750 §3.1: more than one method of sending the token is an invalid_request.
    if (value.length === 0)
      return {ok: false, description: HEADER_DESCRIPTIONS.missing, reason: 'header_missing'}
    if (value.length > 1)
      return {ok: false, description: HEADER_DESCRIPTIONS.multiple, reason: 'header_multiple'}
    value = value[0] as string
  }
  if (!value.startsWith('Bearer '))
    return {ok: false, description: HEADER_DESCRIPTIONS.malformed, reason: 'header_malformed'}
  const token = value.slice(7)
  if (!B68TOKEN.test(token))
    return {ok: false, description: HEADER_DESCRIPTIONS.malformed, reason: 'header_malformed'}
  return {ok: true, token}
}

/**
 * What an HTTP edge should pass to `authenticate`: every Authorization header the client sent.
 * node:http keeps only the first duplicate in `req.headers.authorization`, which would hide the
 * two-header case; `headersDistinct` keeps them all.
 */
export function authorizationOf(req: IncomingMessage): string | string[] | undefined {
  return req.headers.authorization === undefined ? undefined : req.headersDistinct.authorization
}
