import {createBearerAuthenticator, type AuthenticatorDeps} from './authenticator.ts'
import type {BearerAuthenticator, OAuthConfig} from './types.ts'

export type {AuthenticatorDeps} from './authenticator.ts'
export {authorizationOf, parseAuthorization} from './bearer-header.ts'
export type {
  AuthOutcome,
  BearerAuthenticator,
  OAuthConfig,
  Principal,
  ProviderConfig,
} from './types.ts'

/**
 * Builds the bearer-token validator for a set of providers (tried in order; first acceptance wins).
 * Throws ERR_CONFIG_INVALID / ERR_FILE_UNREADABLE at startup for a bad provider, naming its path.
 */
export function createAuthenticator(
  config: OAuthConfig,
  deps: AuthenticatorDeps,
): BearerAuthenticator {
  return createBearerAuthenticator(config, deps)
}
