import * as oauth from 'oauth4webapi'
import {ToolgateError} from '../errors.ts'
import {isLoopbackHost} from '../http/loopback.ts'
import {clientAuth, oauthClient, type ClientRecord} from './client.ts'
import {callOptions, type ResolvedServer} from './discovery.ts'
import type {LoginResult} from './login.ts'
import type {FetchLike} from './oauth-http.ts'
import {toOAuthError} from './oauth-errors.ts'
import type {ProgressSink} from './progress.ts'

export interface DeviceLoginSettings {
  scopes: string[]
  resource?: string
}

export interface DeviceLoginDeps {
  server: ResolvedServer
  /** Fetch for the device authorization and token endpoints (guarded when they were learned). */
  fetch: FetchLike
  /** Supplies the client (registering one for the device grant when needed). */
  client: () => Promise<ClientRecord>
  progress: ProgressSink
  signal?: AbortSignal
  /** Injectable for tests; waits `ms` unless `signal` aborts first. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>
  now?: () => number
}

export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'

/** RFC 8628 §3.2: "If no value is provided, clients MUST use 5 as the default." */
const DEFAULT_INTERVAL_S = 5
/** RFC 8628 §3.5: on slow_down "the interval MUST be increased by 5 seconds". */
const SLOW_DOWN_STEP_S = 5

function sleepFor(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal.reason)
    }
    signal.addEventListener('abort', onAbort, {once: true})
  })
}

/** The endpoint is ours to call only over https, or http on this machine (RFC 8628 §3.1, §5.1). */
function deviceEndpoint(server: ResolvedServer): string {
  const value = server.as.device_authorization_endpoint
  if (!value) {
    throw new ToolgateError(
      'ERR_OAUTH_FLOW',
      `authorization server ${server.as.issuer} does not offer the device authorization grant (no device_authorization_endpoint in its metadata); use --remote-auth-flow browser, or --remote-auth-grant client_credentials`,
    )
  }
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new ToolgateError(
      'ERR_OAUTH_FLOW',
      `authorization server ${server.as.issuer}: device_authorization_endpoint is not a URL`,
    )
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
    throw new ToolgateError(
      'ERR_OAUTH_FLOW',
      `authorization server ${server.as.issuer}: device_authorization_endpoint must be https`,
    )
  }
  return url.href
}

/** The RFC 8628 §3.5 error code of a token endpoint answer, if it is one we poll on. */
function pollError(err: unknown): string | undefined {
  return err instanceof oauth.ResponseBodyError ? err.error : undefined
}

/**
 * One device authorization grant login (RFC 8628), for machines without a browser (SSH sessions):
 * asks for a device code, tells the person where to approve it (stderr / a JSON event), and polls
 * the token endpoint at the server's `interval`, slowing down when told to, until the person
 * approves, denies, or the code expires (`expires_in` bounds the whole flow). RFC 8707 `resource`
 * goes on both requests, like the browser flow.
 */
export async function deviceLogin(
  settings: DeviceLoginSettings,
  deps: DeviceLoginDeps,
): Promise<LoginResult> {
  const endpoint = deviceEndpoint(deps.server)
  const now = deps.now ?? Date.now
  const sleep = deps.sleep ?? sleepFor
  const client = await deps.client()
  const as = deps.server.as
  const params: Record<string, string> = {}
  if (settings.scopes.length) params.scope = settings.scopes.join(' ')
  if (settings.resource) params.resource = settings.resource

  let grant: oauth.DeviceAuthorizationResponse
  try {
    const response = await oauth.deviceAuthorizationRequest(
      as,
      oauthClient(client),
      clientAuth(client),
      params,
      {...callOptions(endpoint, deps.fetch), ...(deps.signal ? {signal: deps.signal} : {})},
    )
    grant = await oauth.processDeviceAuthorizationResponse(as, oauthClient(client), response)
  } catch (err) {
    throw toOAuthError(err, 'device authorization request')
  }

  const expiresInMs = Math.max(1, grant.expires_in) * 1000
  const deadline = now() + expiresInMs
  const expired = AbortSignal.timeout(expiresInMs)
  const signal = deps.signal ? AbortSignal.any([deps.signal, expired]) : expired
  deps.progress({
    event: 'device_code',
    verification_uri: grant.verification_uri,
    ...(grant.verification_uri_complete
      ? {verification_uri_complete: grant.verification_uri_complete}
      : {}),
    user_code: grant.user_code,
    expires_in: grant.expires_in,
  })
  let intervalS = grant.interval && grant.interval > 0 ? grant.interval : DEFAULT_INTERVAL_S
  const expiredError = () =>
    new ToolgateError(
      'ERR_OAUTH_TIMEOUT',
      `the device code expired after ${grant.expires_in}s before the login was approved; run the command again and approve it at ${grant.verification_uri}`,
    )

  for (;;) {
    try {
      await sleep(intervalS * 1000, signal)
    } catch (err) {
      if (expired.aborted || now() >= deadline) throw expiredError()
      throw err
    }
    let tokens: oauth.TokenEndpointResponse
    try {
      const response = await oauth.deviceCodeGrantRequest(
        as,
        oauthClient(client),
        clientAuth(client),
        grant.device_code,
        {
          ...callOptions(as.token_endpoint, deps.fetch),
          signal,
          // RFC 8707 §2.2: the resource is repeated on the token request.
          ...(settings.resource ? {additionalParameters: {resource: settings.resource}} : {}),
        },
      )
      tokens = await oauth.processDeviceCodeResponse(as, oauthClient(client), response)
    } catch (err) {
      const code = pollError(err)
      if (code === 'authorization_pending') continue
      if (code === 'slow_down') {
        intervalS += SLOW_DOWN_STEP_S
        continue
      }
      if (code === 'expired_token' || (expired.aborted && !deps.signal?.aborted))
        throw expiredError()
      if (code === 'access_denied') {
        throw new ToolgateError(
          'ERR_OAUTH_DENIED',
          'the device login was denied at the authorization server',
        )
      }
      throw toOAuthError(err, 'device code exchange at the token endpoint')
    }
    return {client, tokens}
  }
}
