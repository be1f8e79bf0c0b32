import {proxyChallenge} from '../auth/challenge.ts'
import type {AuthFailureKind, OAuthConfig, ProviderConfig} from '../auth/types.ts'
import {metadataUrl} from './well-known.ts'

/** The `--oidc-*` flags of `proxy`/`run` (contract §2). */
export interface IncomingOidcOptions {
  issuer?: string
  audience?: string
  clientId?: string
  clientSecret?: string
  introspectionUrl?: string
  jwksUrl?: string
  /** `--oidc-scopes`, default `["openid"]`. */
  scopes: string[]
}

/** Contract §2: validation is on when issuer, JWKS URL or introspection URL is set. */
export function incomingAuthEnabled(oidc: IncomingOidcOptions | undefined): boolean {
  return Boolean(oidc && (oidc.issuer || oidc.jwksUrl || oidc.introspectionUrl))
}

/**
 * Maps the flags onto the shared validator's provider shape. URLs typed by the operator are
 * trusted as given (contract §2 "Outbound trust"), which is why a loopback issuer works here.
 */
export function oauthConfigFromOidc(
  oidc: IncomingOidcOptions,
  resourceUrl: string | undefined,
): OAuthConfig {
  const provider: ProviderConfig = {
    name: 'oidc',
    issuerUrl: oidc.issuer ?? '',
    trustConfiguredUrls: true,
    ...(oidc.audience ? {audience: oidc.audience} : {}),
    ...(oidc.jwksUrl ? {jwksUrl: oidc.jwksUrl} : {}),
    ...(oidc.introspectionUrl ? {introspectionUrl: oidc.introspectionUrl} : {}),
    ...(oidc.clientId ? {clientId: oidc.clientId} : {}),
    ...(oidc.clientSecret ? {clientSecret: oidc.clientSecret} : {}),
  }
  return {
    resourceUrl: resourceUrl ?? '',
    realm: oidc.issuer ?? '',
    publicPaths: [],
    providers: [provider],
  }
}

/** The 401 of contract §2: JSON body plus the ordered `WWW-Authenticate` challenge. */
export function unauthorizedAnswer(
  oidc: IncomingOidcOptions,
  resourceUrl: string | undefined,
  error: AuthFailureKind,
  description: string,
): {headers: Record<string, string>; body: string} {
  const challenge = proxyChallenge({
    ...(oidc.issuer ? {realm: oidc.issuer} : {}),
    ...(resourceUrl ? {resourceMetadata: metadataUrl(resourceUrl)} : {}),
    ...(oidc.scopes.length ? {scope: oidc.scopes.join(' ')} : {}),
    error,
    description,
  })
  return {
    headers: {'www-authenticate': challenge},
    body: JSON.stringify({error, error_description: description}),
  }
}
