import type {IncomingMessage, ServerResponse} from 'node:http'
import {authorizationOf} from '../auth/bearer-header.ts'
import {registryChallenge} from '../auth/challenge.ts'
import {isPublicPath} from '../auth/public-paths.ts'
import type {BearerAuthenticator, OAuthConfig, Principal} from '../auth/types.ts'
import type {Logger} from '../log/logger.ts'
import {sendErrorBody} from './respond.ts'

/**
 * The oauth-mode gate in front of every non-public path (contract §1 "Authentication"). A failed
 * authentication answers 401 `{"error":"<description>"}` with the RFC 6750 §3 challenge that links
 * the RFC 9728 metadata; an authenticator that throws is a failure too (deny when unsure).
 */
export interface AuthGate {
  /**
   * False when the request was refused (the 401 is sent); otherwise the caller's principal, or
   * null on a public path, where no token is looked at.
   */
  check(
    req: IncomingMessage,
    res: ServerResponse,
    rawPath: string,
  ): Promise<Principal | null | false>
}

export function createAuthGate(
  oauth: OAuthConfig,
  authenticator: BearerAuthenticator,
  logger: Logger,
): AuthGate {
  const publicPaths = oauth.publicPaths
  return {
    async check(req, res, rawPath) {
      if (isPublicPath(rawPath, publicPaths)) return null
      let outcome
      try {
        // Every Authorization header the client sent: two of them are an RFC 6750 §3.1
        // invalid_request, which req.headers.authorization (first one only) would hide.
        outcome = await authenticator.authenticate(authorizationOf(req))
      } catch (err) {
        logger.error('authenticator failed', {err: err as Error})
        outcome = {
          ok: false as const,
          error: 'invalid_token' as const,
          description: 'token could not be validated',
        }
      }
      if (outcome.ok) {
        logger.debug('authenticated', {
          provider: outcome.principal.provider,
          sub: outcome.principal.subject,
        })
        return outcome.principal
      }
      sendErrorBody(res, 401, outcome.description, {
        'www-authenticate': registryChallenge({
          realm: oauth.realm,
          error: outcome.error,
          description: outcome.description,
          resourceUrl: oauth.resourceUrl,
        }),
      })
      return false
    },
  }
}
