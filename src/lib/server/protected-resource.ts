import type {OAuthConfig} from '../auth/types.ts'

/**
 * RFC 9728 §3.2 protected-resource metadata for `GET /.well-known/oauth-protected-resource`
 * (contract §1). `resource_documentation` points at this server's own `/openapi.json` under the
 * resource URL: it is always public, always matches the running version and needs no outside host.
 */
export function protectedResourceMetadata(oauth: OAuthConfig): string {
  const base = oauth.resourceUrl.replace(/\/+$/, '')
  return JSON.stringify({
    resource: oauth.resourceUrl,
    authorization_servers: oauth.providers.map((p) => p.issuerUrl),
    bearer_methods_supported: ['header'],
    resource_documentation: `${base}/openapi.json`,
  })
}
