import * as oauth from 'oauth4webapi'
import {ToolgateError} from '../errors.ts'
import {buildAuthorizationUrl} from './authorization-url.ts'
import {startCallbackServer, type CallbackResult} from './callback-server.ts'
import {clientAuth, oauthClient, type ClientRecord} from './client.ts'
import {callOptions, type ResolvedServer} from './discovery.ts'
import type {FetchLike} from './oauth-http.ts'
import {toOAuthError} from './oauth-errors.ts'
import type {ProgressSink} from './progress.ts'

export interface LoginSettings {
  callbackPort: number
  scopes: string[]
  scopeParamName?: string
  resource?: string
  timeoutMs: number
  skipBrowser: boolean
}

export interface LoginDeps {
  server: ResolvedServer
  /** Fetch for the token endpoint (guarded when the endpoint was learned). */
  fetch: FetchLike
  /** Supplies the client for this redirect URI (registering one when needed). */
  client: (redirectUri: string) => Promise<ClientRecord>
  openBrowser: (url: string) => Promise<void>
  progress: ProgressSink
  signal?: AbortSignal
}

export interface LoginResult {
  client: ClientRecord
  tokens: oauth.TokenEndpointResponse
  /** Who logged in, from the ID token (OIDC) when there is one. */
  subject?: string
}

function subjectOf(tokens: oauth.TokenEndpointResponse): string | undefined {
  const claims = oauth.getValidatedIdTokenClaims(tokens)
  if (!claims) return undefined
  for (const key of ['preferred_username', 'email', 'name', 'sub']) {
    const v = claims[key]
    if (typeof v === 'string' && v) return v
  }
  return undefined
}

/**
 * One interactive authorization-code login: loopback callback server, PKCE S256, random state (and
 * nonce for OIDC), browser, code exchange. The whole flow, including registration and the code
 * exchange, is bounded by `timeoutMs`; the callback port is released on every path.
 */
export async function interactiveLogin(
  settings: LoginSettings,
  deps: LoginDeps,
): Promise<LoginResult> {
  const timeout = AbortSignal.timeout(settings.timeoutMs)
  const signal = deps.signal ? AbortSignal.any([deps.signal, timeout]) : timeout
  const callback = await startCallbackServer({
    port: settings.callbackPort,
    onRejected: (reason) => deps.progress({event: 'callback_rejected', reason}),
  })
  let answer: CallbackResult | undefined
  try {
    const client = await deps.client(callback.redirectUri)
    const verifier = oauth.generateRandomCodeVerifier()
    const state = oauth.generateRandomState()
    const nonce =
      deps.server.oidc && settings.scopes.includes('openid')
        ? oauth.generateRandomNonce()
        : undefined
    const url = buildAuthorizationUrl(deps.server, {
      clientId: client.client_id,
      redirectUri: callback.redirectUri,
      scopes: settings.scopes,
      scopeParamName: settings.scopeParamName,
      state,
      codeChallenge: await oauth.calculatePKCECodeChallenge(verifier),
      nonce,
      resource: settings.resource,
    })

    if (settings.skipBrowser) {
      deps.progress({event: 'login_url', url: url.href, reason: 'skip_browser'})
    } else {
      deps.progress({event: 'browser_opening', url: url.href})
      await deps
        .openBrowser(url.href)
        .catch(() => deps.progress({event: 'login_url', url: url.href, reason: 'browser_failed'}))
    }
    deps.progress({event: 'waiting', timeout_ms: settings.timeoutMs})

    answer = await callback.wait(state, signal)
    let params: URLSearchParams
    try {
      params = oauth.validateAuthResponse(deps.server.as, oauthClient(client), answer.params, state)
    } catch (err) {
      // RFC 6749 §4.1.2.1: the server's error and description are shown and reported.
      const e = toOAuthError(
        err,
        'authorization',
        err instanceof oauth.AuthorizationResponseError ? 'ERR_OAUTH_DENIED' : 'ERR_OAUTH_FLOW',
      )
      answer.finish(false, e.message)
      throw e
    }

    let tokens: oauth.TokenEndpointResponse
    try {
      const response = await oauth.authorizationCodeGrantRequest(
        deps.server.as,
        oauthClient(client),
        clientAuth(client),
        params,
        callback.redirectUri,
        verifier,
        {
          ...callOptions(deps.server.as.token_endpoint, deps.fetch),
          signal,
          // RFC 8707 §2.2: the resource is repeated on the token request.
          ...(settings.resource ? {additionalParameters: {resource: settings.resource}} : {}),
        },
      )
      tokens = await oauth.processAuthorizationCodeResponse(
        deps.server.as,
        oauthClient(client),
        response,
        {
          expectedNonce: nonce ?? oauth.expectNoNonce,
          requireIdToken: false,
        },
      )
    } catch (err) {
      const e = toOAuthError(err, 'code exchange at the token endpoint')
      answer.finish(false, e.message)
      throw e
    }
    const subject = subjectOf(tokens)
    answer.finish(
      true,
      `Logged in${subject ? ` as ${subject}` : ''}. You can close this window and return to the terminal.`,
    )
    return {client, tokens, subject}
  } catch (err) {
    if (timeout.aborted && !(err instanceof ToolgateError && err.code !== 'ERR_OAUTH_FLOW')) {
      throw new ToolgateError(
        'ERR_OAUTH_TIMEOUT',
        `remote login did not complete within ${settings.timeoutMs / 1000}s; run the command again and finish the login in the browser, or raise --remote-auth-timeout`,
        {cause: err},
      )
    }
    throw err
  } finally {
    await callback.close()
  }
}
