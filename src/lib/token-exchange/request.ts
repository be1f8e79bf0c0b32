import {ToolgateError} from '../errors.ts'
import {basicAuthorization} from '../http/basic-auth.ts'

/** RFC 8693 §2.1 / §3 identifiers. */
export const GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:token-exchange'
export const TOKEN_TYPE_ACCESS = 'urn:ietf:params:oauth:token-type:access_token'
export const TOKEN_TYPE_ID = 'urn:ietf:params:oauth:token-type:id_token'

export type SubjectTokenType = 'access_token' | 'id_token'

export interface TokenExchangeConfig {
  url: string
  clientId?: string
  clientSecret?: string
  audience?: string
  scopes?: readonly string[]
  subjectTokenType: SubjectTokenType
  /** undefined: the exchanged token replaces `Authorization`. */
  headerName?: string
  timeoutMs: number
}

export interface ExchangedToken {
  accessToken: string
  /** Seconds, as the server said (RFC 8693 §2.2.1 `expires_in`); undefined when absent. */
  expiresIn: number | undefined
}

/** Builds the token-exchange request (RFC 8693 §2.1). I/O happens in the caller. */
export function buildExchangeRequest(
  config: TokenExchangeConfig,
  subjectToken: string,
): {
  url: string
  init: {method: 'POST'; headers: Record<string, string>; body: string; redirect: 'manual'}
} {
  const form = new URLSearchParams()
  form.set('grant_type', GRANT_TYPE)
  form.set('subject_token', subjectToken)
  form.set(
    'subject_token_type',
    config.subjectTokenType === 'id_token' ? TOKEN_TYPE_ID : TOKEN_TYPE_ACCESS,
  )
  form.set('requested_token_type', TOKEN_TYPE_ACCESS)
  if (config.audience) form.set('audience', config.audience)
  if (config.scopes?.length) form.set('scope', config.scopes.join(' '))
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'application/json',
  }
  if (config.clientId && config.clientSecret)
    headers.authorization = basicAuthorization(config.clientId, config.clientSecret) // RFC 6749 §2.3.1
  else if (config.clientId) form.set('client_id', config.clientId) // public client, RFC 6749 §3.2.1
  return {
    url: config.url,
    init: {method: 'POST', headers, body: form.toString(), redirect: 'manual'},
  }
}

/**
 * Validates the token endpoint's answer (RFC 8693 §2.2). Errors carry the OAuth `error` code when
 * the server sent one, never the token or the server's free-text description.
 */
export function processExchangeResponse(res: {status: number; body: unknown}): ExchangedToken {
  const body = res.body
  if (body === undefined) {
    throw new ToolgateError(
      'ERR_TOKEN_EXCHANGE',
      `token exchange: HTTP ${res.status} with a body that is not JSON`,
    )
  }
  const obj = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>
  if (res.status !== 200) {
    const code =
      typeof obj.error === 'string' && /^[\x20-\x7e]{1,64}$/.test(obj.error) ? obj.error : 'unknown'
    throw new ToolgateError(
      'ERR_TOKEN_EXCHANGE',
      `token exchange: HTTP ${res.status} error=${code}`,
      {details: {status: res.status, error: code}},
    )
  }
  if (typeof obj.access_token !== 'string' || obj.access_token === '') {
    throw new ToolgateError('ERR_TOKEN_EXCHANGE', 'token exchange: response has no access_token')
  }
  // RFC 8693 §2.2.1: token_type is required; a non-Bearer token cannot go in a Bearer header.
  // "N_A" is allowed by §2.2.1 for tokens that are not access tokens, which we did not ask for.
  if (typeof obj.token_type !== 'string' || obj.token_type.toLowerCase() !== 'bearer') {
    throw new ToolgateError('ERR_TOKEN_EXCHANGE', `token exchange: token_type must be Bearer`)
  }
  let expiresIn: number | undefined
  if (obj.expires_in !== undefined) {
    const n = typeof obj.expires_in === 'string' ? Number(obj.expires_in) : obj.expires_in
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) {
      throw new ToolgateError(
        'ERR_TOKEN_EXCHANGE',
        'token exchange: expires_in is not a non-negative number',
      )
    }
    expiresIn = n
  }
  return {accessToken: obj.access_token, expiresIn}
}
