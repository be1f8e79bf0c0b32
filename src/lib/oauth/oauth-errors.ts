import * as oauth from 'oauth4webapi'
import {ToolgateError, type ErrorCode} from '../errors.ts'

/**
 * Turns what oauth4webapi throws into our error table. The server's `error` code and
 * `error_description` are kept (they are what a user needs to fix things); they are trimmed and
 * stripped of control characters since they come from a remote party. No token ever appears here:
 * oauth4webapi errors carry the response body, which we do not copy.
 */
export interface OAuthFailure {
  /** OAuth error code (RFC 6749 §5.2), e.g. invalid_grant, invalid_client; undefined if none. */
  error: string | undefined
  description: string | undefined
  status: number | undefined
}

export function clean(text: unknown, max = 200): string | undefined {
  if (typeof text !== 'string' || text === '') return undefined
  // eslint-disable-next-line no-control-regex
  const t = text.replace(/[\u0000-\u001f\u007f]/g, ' ').trim()
  return t.length > max ? t.slice(0, max) + '…' : t
}

export function oauthFailure(err: unknown): OAuthFailure {
  if (err instanceof oauth.ResponseBodyError) {
    return {
      error: clean(err.error, 64),
      description: clean(err.error_description),
      status: err.status,
    }
  }
  if (err instanceof oauth.AuthorizationResponseError) {
    return {
      error: clean(err.error, 64),
      description: clean(err.error_description),
      status: undefined,
    }
  }
  if (err instanceof oauth.WWWAuthenticateChallengeError) {
    const c = err.cause[0]
    return {
      error: clean(c?.parameters.error, 64),
      description: clean(c?.parameters.error_description),
      status: err.status,
    }
  }
  return {error: undefined, description: undefined, status: undefined}
}

/** `<what> failed: <error>: <description>` or the underlying reason, as a ToolgateError. */
export function toOAuthError(
  err: unknown,
  what: string,
  code: ErrorCode = 'ERR_OAUTH_FLOW',
): ToolgateError {
  if (err instanceof ToolgateError) return err
  // oauth4webapi wraps a failed body read ("failed to parse … as JSON"); the reason that matters
  // (an oversized or cut-off response, a timeout) is our own error further down the cause chain.
  for (
    let e = (err as {cause?: unknown})?.cause, depth = 0;
    e && depth < 5;
    e = (e as {cause?: unknown}).cause, depth++
  ) {
    if (e instanceof ToolgateError)
      return new ToolgateError(e.code, `${what} failed: ${e.message}`, {
        cause: err,
        ...(e.details ? {details: e.details} : {}),
      })
  }
  const f = oauthFailure(err)
  if (f.error) {
    const text = `${what} failed: ${f.error}${f.description ? ` (${f.description})` : ''}`
    return new ToolgateError(code, text, {cause: err, details: {oauthError: f.error}})
  }
  const reason = clean((err as Error)?.message) ?? 'unknown error'
  return new ToolgateError(code, `${what} failed: ${reason}`, {cause: err})
}

export function oauthErrorCode(err: unknown): string | undefined {
  if (err instanceof ToolgateError) return err.details?.oauthError as string | undefined
  return oauthFailure(err).error
}
