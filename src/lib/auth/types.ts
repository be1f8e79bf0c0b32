import type {ReasonCode} from './reasons.ts'

/**
 * The shape of incoming-token validation shared by `serve`, `proxy` and `run` (contract §1, §2).
 */

/** One identity provider, field names exactly as the spec's provider object. */
export interface ProviderConfig {
  name: string
  issuerUrl: string
  /** Expected `aud`; undefined accepts any audience (proxy/run without --oidc-audience). */
  audience?: string
  jwksUrl?: string
  introspectionUrl?: string
  clientId?: string
  clientSecretFile?: string
  /** Secret given directly (proxy/run `--oidc-client-secret`); serve reads clientSecretFile instead. */
  clientSecret?: string
  caCertPath?: string
  authTokenFile?: string
  allowPrivateIP?: boolean
  /**
   * proxy/run only (contract §2): URLs the operator typed (issuer discovery, jwksUrl,
   * introspectionUrl) are trusted even on loopback/private hosts; URLs learned from remote
   * documents stay guarded unless the issuer itself is on such a host. Not a config-file field.
   */
  trustConfiguredUrls?: boolean
}

export interface OAuthConfig {
  resourceUrl: string
  realm: string
  publicPaths: string[]
  providers: ProviderConfig[]
}

export interface Principal {
  provider: string
  subject: string
  claims: Record<string, unknown>
}

export type AuthFailureKind = 'invalid_request' | 'invalid_token'

export type AuthOutcome =
  | {ok: true; principal: Principal}
  | {
      ok: false
      error: AuthFailureKind
      description: string
      /** Which check refused the token (docs/troubleshooting.md); see `wireDescription`. */
      reason?: ReasonCode
    }

export interface BearerAuthenticator {
  /** `authorization` is the raw header value(s) as node:http gives them (two headers → array or joined). */
  authenticate(authorization: string | string[] | undefined): Promise<AuthOutcome>
  close(): Promise<void>
}
