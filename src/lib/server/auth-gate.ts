import type {IncomingMessage, ServerResponse} from 'node:http'
import {authorizationOf} from '../auth/bearer-header.ts'
import {registryChallenge} from '../auth/challenge.ts'
import {wireDescription} from '../auth/reasons.ts'
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
    /** A write (publish, status): a valid token is required even on a public path. */
    write?: boolean,
  ): Promise<Principal | null | false>
}

export interface AuthGateOptions {
  /**
   * On a public path, a request that carries a token is still identified (a registry policy shows
   * its caller what that caller may see); a missing or refused token there makes the caller
   * anonymous, never a 401, since the path is public.
   */
  identifyOnPublicPaths?: boolean
}

export function createAuthGate(
  oauth: OAuthConfig,
  authenticator: BearerAuthenticator,
  logger: Logger,
  options: AuthGateOptions = {},
): AuthGate {
  const publicPaths = oauth.publicPaths
  const authenticate = async (req: IncomingMessage) => {
    try {
      // Every Authorization header the client sent: two of them are an RFC 6750 §3.1
      // invalid_request, which req.headers.authorization (first one only) would hide.
      return await authenticator.authenticate(authorizationOf(req))
    } catch (err) {
      logger.error('authenticator failed', {err: err as Error})
      return {
        ok: false as const,
        error: 'invalid_token' as const,
        description: 'token could not be validated',
        reason: 'internal' as const,
      }
    }
  }
  return {
    async check(req, res, rawPath, write) {
      if (!write && isPublicPath(rawPath, publicPaths)) {
        if (!options.identifyOnPublicPaths || req.headers.authorization === undefined) return null
        const outcome = await authenticate(req)
        return outcome.ok ? outcome.principal : null
      }
      const outcome = await authenticate(req)
      if (outcome.ok) {
        logger.debug('authenticated', {
          provider: outcome.principal.provider,
          sub: outcome.principal.subject,
        })
        return outcome.principal
      }
      // The reason code lets an operator run `toolgate auth explain` (docs/troubleshooting.md).
      const description = wireDescription(outcome)
      logger.info('request refused', {status: 401, error: outcome.error, code: outcome.reason})
      sendErrorBody(res, 401, description, {
        'www-authenticate': registryChallenge({
          realm: oauth.realm,
          error: outcome.error,
          description,
          resourceUrl: oauth.resourceUrl,
        }),
      })
      return false
    },
  }
}
