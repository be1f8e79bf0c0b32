import * as oauth from 'oauth4webapi'
import {ToolgateError} from '../errors.ts'
import {callOptions, type ResolvedServer} from './discovery.ts'
import type {FetchLike} from './oauth-http.ts'
import {toOAuthError} from './oauth-errors.ts'

/** The OAuth client the proxy logs in as: pre-registered (typed) or dynamically registered. */
export interface ClientRecord {
  client_id: string
  client_secret?: string
  /** Client authentication at the token endpoint (RFC 7591 §2). */
  token_endpoint_auth_method: string
  /** The redirect URI a dynamic registration was made for; a different port means re-registering. */
  redirect_uri?: string
  /** Registered for the device authorization grant (RFC 8628), which has no redirect URI. */
  device?: boolean
  dynamic: boolean
}

/** Picks client authentication for a confidential client: Basic unless the server only does post. */
export function preRegisteredClient(
  clientId: string,
  clientSecret: string | undefined,
  as: oauth.AuthorizationServer,
): ClientRecord {
  if (clientSecret === undefined)
    return {client_id: clientId, token_endpoint_auth_method: 'none', dynamic: false}
  const supported = as.token_endpoint_auth_methods_supported
  // RFC 8414 §2: absent means client_secret_basic.
  const method =
    !supported || supported.includes('client_secret_basic')
      ? 'client_secret_basic'
      : supported.includes('client_secret_post')
        ? 'client_secret_post'
        : 'client_secret_basic'
  return {
    client_id: clientId,
    client_secret: clientSecret,
    token_endpoint_auth_method: method,
    dynamic: false,
  }
}

export function clientAuth(client: ClientRecord): oauth.ClientAuth {
  if (client.client_secret === undefined || client.token_endpoint_auth_method === 'none')
    return oauth.None()
  if (client.token_endpoint_auth_method === 'client_secret_post')
    return oauth.ClientSecretPost(client.client_secret)
  return oauth.ClientSecretBasic(client.client_secret)
}

export function oauthClient(client: ClientRecord): oauth.Client {
  return {
    client_id: client.client_id,
    token_endpoint_auth_method: client.token_endpoint_auth_method,
  }
}

/**
 * RFC 7591 dynamic registration as a public native client (RFC 8252): no secret, PKCE does the
 * proving, loopback redirect, authorization_code + refresh_token. The RFC 7592 management
 * credentials of the answer (registration_access_token, registration_client_uri) are not kept:
 * nothing here updates or deletes registrations, and a credential nobody uses is only a liability.
 * Logging out is deleting the saved names (docs/remote-auth.md).
 */
export async function registerClient(
  server: ResolvedServer,
  /** Undefined: a client for the device authorization grant (RFC 8628), which redirects nowhere. */
  redirectUri: string | undefined,
  fetch: FetchLike,
  clientName = 'toolgate proxy',
): Promise<ClientRecord> {
  const endpoint = server.as.registration_endpoint
  if (!endpoint) {
    throw new ToolgateError(
      'ERR_OAUTH_FLOW',
      `authorization server ${server.as.issuer} offers no dynamic client registration (no registration_endpoint in its metadata); register a client there and pass --remote-auth-client-id (and --remote-auth-client-secret for a confidential client)`,
    )
  }
  let registered: oauth.OmitSymbolProperties<oauth.Client>
  try {
    const response = await oauth.dynamicClientRegistrationRequest(
      server.as,
      {
        client_name: clientName,
        ...(redirectUri
          ? {
              redirect_uris: [redirectUri],
              grant_types: ['authorization_code', 'refresh_token'],
              response_types: ['code'],
            }
          : {
              redirect_uris: [],
              grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
              response_types: [],
            }),
        token_endpoint_auth_method: 'none',
        application_type: 'native',
      },
      callOptions(endpoint, fetch),
    )
    registered = await oauth.processDynamicClientRegistrationResponse(response)
  } catch (err) {
    throw toOAuthError(err, `client registration at ${server.as.issuer}`)
  }
  const secret = typeof registered.client_secret === 'string' ? registered.client_secret : undefined
  const method =
    typeof registered.token_endpoint_auth_method === 'string'
      ? registered.token_endpoint_auth_method
      : secret
        ? 'client_secret_basic'
        : 'none'
  return {
    client_id: registered.client_id,
    ...(secret ? {client_secret: secret} : {}),
    token_endpoint_auth_method: method,
    ...(redirectUri ? {redirect_uri: redirectUri} : {device: true}),
    dynamic: true,
  }
}

/** Parses a stored client record; anything malformed is treated as absent (re-register). */
export function parseClientRecord(text: string | undefined): ClientRecord | undefined {
  if (!text) return undefined
  try {
    const v = JSON.parse(text) as Partial<ClientRecord>
    if (typeof v.client_id !== 'string' || typeof v.token_endpoint_auth_method !== 'string')
      return undefined
    // Only the fields in use: older records also held the RFC 7592 registration access token.
    return {
      client_id: v.client_id,
      ...(typeof v.client_secret === 'string' ? {client_secret: v.client_secret} : {}),
      token_endpoint_auth_method: v.token_endpoint_auth_method,
      ...(typeof v.redirect_uri === 'string' ? {redirect_uri: v.redirect_uri} : {}),
      ...(v.device === true ? {device: true} : {}),
      dynamic: true,
    }
  } catch {
    return undefined
  }
}
