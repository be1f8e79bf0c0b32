import type {BearerAuthenticator} from './types.ts'

/**
 * Fails every request closed. Used where oauth mode is configured but no validator is wired:
 * deny when unsure (secure by default), never a 200.
 */
export function denyAllAuthenticator(): BearerAuthenticator {
  return {
    async authenticate(authorization) {
      if (authorization === undefined) return {ok: false, error: 'invalid_request', description: 'missing bearer token'}
      return {ok: false, error: 'invalid_token', description: 'token validation is not available'}
    },
    async close() {},
  }
}
