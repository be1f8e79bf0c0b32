import type {ResolvedServer} from './discovery.ts'

export interface AuthorizationRequest {
  clientId: string
  redirectUri: string
  scopes: string[]
  /** Renames the scope parameter in this URL only (some servers want e.g. `scopes`). */
  scopeParamName?: string
  state: string
  codeChallenge: string
  nonce?: string
  resource?: string
}

/**
 * The authorization request (RFC 6749 §4.1.1) with PKCE S256 (RFC 7636 §4.3) and RFC 8707 §2
 * `resource`. Query parameters already in the endpoint URL are kept (RFC 6749 §3.1).
 */
export function buildAuthorizationUrl(server: ResolvedServer, req: AuthorizationRequest): URL {
  const url = new URL(server.as.authorization_endpoint as string)
  const p = url.searchParams
  p.set('response_type', 'code')
  p.set('client_id', req.clientId)
  p.set('redirect_uri', req.redirectUri)
  if (req.scopes.length > 0) p.set(req.scopeParamName || 'scope', req.scopes.join(' '))
  p.set('state', req.state)
  p.set('code_challenge', req.codeChallenge)
  p.set('code_challenge_method', 'S256')
  if (req.nonce) p.set('nonce', req.nonce)
  if (req.resource) p.set('resource', req.resource)
  return url
}
