import type {Logger} from '../log/logger.ts'
import {denyAllAuthenticator} from './deny-all.ts'
import type {BearerAuthenticator, OAuthConfig} from './types.ts'

export interface AuthenticatorDeps {
  logger: Logger
}

/**
 * Builds the bearer-token validator for a set of providers (tried in order; first acceptance wins).
 * Placeholder until token validation lands: fails closed.
 */
export function createAuthenticator(_config: OAuthConfig, _deps: AuthenticatorDeps): BearerAuthenticator {
  return denyAllAuthenticator()
}
