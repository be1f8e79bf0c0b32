import * as oauth from 'oauth4webapi'
import {ToolgateError} from '../errors.ts'
import type {FetchLike, OAuthHttp} from './oauth-http.ts'
import {toOAuthError} from './oauth-errors.ts'
import {isLoopbackHost} from '../http/loopback.ts'
import {bearerChallenge} from './www-authenticate.ts'

/** How the authorization server was found; reported to the user and used for defaults. */
export type DiscoveryVia = 'issuer' | 'explicit' | 'resource_metadata' | 'realm' | 'well_known'

export interface ResolvedServer {
  as: oauth.AuthorizationServer
  /** Metadata came from OpenID Connect Discovery: `openid` scopes and a nonce apply. */
  oidc: boolean
  /** Endpoints were read from a remote document (contract §2: guarded fetch), not typed. */
  learned: boolean
  via: DiscoveryVia
  /** Scopes the protected resource asked for (WWW-Authenticate `scope`, RFC 9728 scopes_supported). */
  resourceScopes?: string[]
  /** RFC 9728 `resource` of the target, sent as RFC 8707 `resource` when none was given. */
  resource?: string
}

export interface ServerLocator {
  targetUri: URL
  issuer?: URL
  authorizeUrl?: URL
  tokenUrl?: URL
}

/** Options for an oauth4webapi call to `url` with the given fetch (http only reaches loopback). */
export function callOptions(
  url: string | URL | undefined,
  fetch: FetchLike,
): {[oauth.customFetch]: FetchLike; [oauth.allowInsecureRequests]?: boolean} {
  const insecure = url !== undefined && new URL(url).protocol === 'http:'
  return {[oauth.customFetch]: fetch, ...(insecure ? {[oauth.allowInsecureRequests]: true} : {})}
}

/** Endpoints from metadata must be https, or http on a loopback host (RFC 8414 §2, RFC 8252 §8.3). */
function checkEndpoint(
  as: oauth.AuthorizationServer,
  field: 'authorization_endpoint' | 'token_endpoint' | 'registration_endpoint',
  required: boolean,
): void {
  const value = as[field]
  if (value === undefined) {
    if (required)
      throw new ToolgateError(
        'ERR_OAUTH_FLOW',
        `authorization server ${as.issuer} has no ${field} in its metadata`,
      )
    return
  }
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new ToolgateError(
      'ERR_OAUTH_FLOW',
      `authorization server ${as.issuer}: ${field} is not a URL`,
    )
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
    throw new ToolgateError(
      'ERR_OAUTH_FLOW',
      `authorization server ${as.issuer}: ${field} must use https (got ${url.origin})`,
    )
  }
}

/**
 * Authorization server metadata for an issuer: OpenID Connect Discovery first, then RFC 8414
 * (§3: /.well-known/oauth-authorization-server inserted before the issuer's path). oauth4webapi
 * checks that the document's `issuer` equals the one asked for (RFC 8414 §3.3, mix-up defence).
 */
export async function discoverIssuer(
  issuer: URL,
  fetch: FetchLike,
): Promise<{as: oauth.AuthorizationServer; oidc: boolean}> {
  const reasons: string[] = []
  for (const algorithm of ['oidc', 'oauth2'] as const) {
    try {
      const response = await oauth.discoveryRequest(issuer, {
        algorithm,
        ...callOptions(issuer, fetch),
      })
      const as = await oauth.processDiscoveryResponse(issuer, response)
      checkEndpoint(as, 'authorization_endpoint', true)
      checkEndpoint(as, 'token_endpoint', true)
      checkEndpoint(as, 'registration_endpoint', false)
      return {as, oidc: algorithm === 'oidc'}
    } catch (err) {
      if (err instanceof ToolgateError && err.code !== 'ERR_OAUTH_FLOW') throw err
      reasons.push(
        `${algorithm === 'oidc' ? 'openid-configuration' : 'oauth-authorization-server'}: ${toOAuthError(err, 'discovery').message.replace(/^discovery failed: /, '')}`,
      )
    }
  }
  throw new ToolgateError(
    'ERR_OAUTH_FLOW',
    `no OpenID Connect or OAuth metadata for issuer ${issuer.href} (${reasons.join('; ')})`,
  )
}

/** Plain OAuth with typed endpoints: a metadata object of our own making. */
export function explicitServer(authorizeUrl: URL, tokenUrl: URL): ResolvedServer {
  return {
    as: {
      issuer: tokenUrl.origin,
      authorization_endpoint: authorizeUrl.href,
      token_endpoint: tokenUrl.href,
    },
    oidc: false,
    learned: false,
    via: 'explicit',
  }
}

export interface ProtectedResourceMetadata {
  resource?: string
  authorization_servers: string[]
  scopes_supported?: string[]
}

/** Validates an RFC 9728 §2 document; `where` names its URL in errors. */
export function parseProtectedResourceMetadata(
  body: unknown,
  where: string,
): ProtectedResourceMetadata {
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw new ToolgateError(
      'ERR_OAUTH_FLOW',
      `${where}: protected resource metadata is not a JSON object`,
    )
  }
  const doc = body as Record<string, unknown>
  const servers = doc.authorization_servers
  if (
    !Array.isArray(servers) ||
    servers.length === 0 ||
    !servers.every((s) => typeof s === 'string')
  ) {
    throw new ToolgateError(
      'ERR_OAUTH_FLOW',
      `${where}: authorization_servers must be a non-empty array of URLs`,
    )
  }
  for (const s of servers as string[]) {
    if (!URL.canParse(s) || !/^https?:$/.test(new URL(s).protocol)) {
      throw new ToolgateError(
        'ERR_OAUTH_FLOW',
        `${where}: authorization_servers contains "${s.slice(0, 100)}", not an http(s) URL`,
      )
    }
  }
  const scopes = Array.isArray(doc.scopes_supported)
    ? doc.scopes_supported.filter((s): s is string => typeof s === 'string')
    : undefined
  return {
    resource: typeof doc.resource === 'string' ? doc.resource : undefined,
    authorization_servers: servers as string[],
    scopes_supported: scopes && scopes.length > 0 ? scopes : undefined,
  }
}

async function fetchMetadata(
  url: URL,
  fetch: FetchLike,
): Promise<ProtectedResourceMetadata | undefined> {
  const response = await fetch(url.href, {
    headers: {accept: 'application/json'},
    redirect: 'manual',
  })
  if (response.status !== 200) {
    await response.body?.cancel()
    return undefined
  }
  let body: unknown
  try {
    body = await response.json()
  } catch (err) {
    // An oversized body (the capped fetch of oauth-http.ts) says so rather than "not JSON".
    if (err instanceof ToolgateError) throw err
    throw new ToolgateError(
      'ERR_OAUTH_FLOW',
      `${url.href}: protected resource metadata is not JSON`,
    )
  }
  return parseProtectedResourceMetadata(body, url.href)
}

/** RFC 9728 §3.1: the well-known URI is inserted between the host and the resource's path. */
export function wellKnownResourceMetadataUrls(target: URL): URL[] {
  const path = target.pathname === '/' ? '' : target.pathname.replace(/\/$/, '')
  const urls = [new URL(`/.well-known/oauth-protected-resource${path}`, target.origin)]
  if (path) urls.push(new URL('/.well-known/oauth-protected-resource', target.origin))
  return urls
}

function scopesOf(text: string | undefined): string[] | undefined {
  const list = text?.split(/\s+/).filter(Boolean)
  return list && list.length > 0 ? list : undefined
}

async function fromIssuer(
  issuer: URL,
  fetch: FetchLike,
  via: DiscoveryVia,
  extra: Partial<ResolvedServer>,
): Promise<ResolvedServer> {
  const {as, oidc} = await discoverIssuer(issuer, fetch)
  return {as, oidc, learned: true, via, ...extra}
}

/**
 * Automatic detection (contract §3): ask the target; on a 401 Bearer challenge follow
 * `resource_metadata` (RFC 9728 §5.1) to `authorization_servers[0]` and its metadata; else a realm
 * that is a URL; else the target's well-known documents (RFC 9728 §3, then the target origin as the
 * issuer, as MCP clients do). Everything learned goes through `http.learned` (contract §2).
 */
export async function detectFromTarget(target: URL, http: OAuthHttp): Promise<ResolvedServer> {
  const probe = await http.trusted(target.href, {
    method: 'GET',
    headers: {accept: 'application/json, text/event-stream'},
    redirect: 'manual',
  })
  await probe.body?.cancel()
  const challenge =
    probe.status === 401 ? bearerChallenge(probe.headers.get('www-authenticate')) : undefined
  const challengeScopes = scopesOf(challenge?.params.scope)

  const metadataUrl = challenge?.params.resource_metadata
  if (metadataUrl) {
    if (!URL.canParse(metadataUrl) || !/^https?:$/.test(new URL(metadataUrl).protocol)) {
      throw new ToolgateError(
        'ERR_OAUTH_FLOW',
        `the target's WWW-Authenticate resource_metadata is not an http(s) URL`,
      )
    }
    const prm = await fetchMetadata(new URL(metadataUrl), http.learned)
    if (!prm)
      throw new ToolgateError(
        'ERR_OAUTH_FLOW',
        `the target's resource_metadata ${new URL(metadataUrl).origin}… did not answer 200`,
      )
    return fromIssuer(
      new URL(prm.authorization_servers[0] as string),
      http.learned,
      'resource_metadata',
      {
        resource: prm.resource,
        resourceScopes: challengeScopes ?? prm.scopes_supported,
      },
    )
  }

  const realm = challenge?.params.realm
  if (realm && URL.canParse(realm) && /^https?:$/.test(new URL(realm).protocol)) {
    return fromIssuer(new URL(realm), http.learned, 'realm', {resourceScopes: challengeScopes})
  }

  // Well-known documents of the operator's own target are as trusted as the target itself.
  for (const url of wellKnownResourceMetadataUrls(target)) {
    const prm = await fetchMetadata(url, http.trusted).catch(() => undefined)
    if (prm) {
      return fromIssuer(
        new URL(prm.authorization_servers[0] as string),
        http.learned,
        'well_known',
        {
          resource: prm.resource,
          resourceScopes: challengeScopes ?? prm.scopes_supported,
        },
      )
    }
  }
  try {
    const {as, oidc} = await discoverIssuer(new URL(target.origin), http.trusted)
    return {as, oidc, learned: false, via: 'well_known', resourceScopes: challengeScopes}
  } catch (err) {
    const asked =
      probe.status === 401
        ? 'answered 401 but named no authorization server'
        : `answered ${probe.status} without a Bearer challenge`
    throw new ToolgateError(
      'ERR_OAUTH_FLOW',
      `cannot find the target's authorization server: it ${asked}, and it publishes no OAuth metadata; pass --remote-auth-issuer or --remote-auth-authorize-url with --remote-auth-token-url`,
      {cause: err},
    )
  }
}

/** Finds the authorization server by the operator's choice: issuer, explicit URLs, or detection. */
export async function resolveServer(
  locator: ServerLocator,
  http: OAuthHttp,
): Promise<ResolvedServer> {
  if (locator.issuer) {
    const {as, oidc} = await discoverIssuer(locator.issuer, http.trusted)
    return {as, oidc, learned: true, via: 'issuer'}
  }
  if (locator.authorizeUrl && locator.tokenUrl)
    return explicitServer(locator.authorizeUrl, locator.tokenUrl)
  return detectFromTarget(locator.targetUri, http)
}
