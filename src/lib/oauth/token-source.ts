import * as oauth from 'oauth4webapi'
import {ToolgateError, isToolgateError} from '../errors.ts'
import type {Logger} from '../log/logger.ts'
import type {UpstreamTokenSource} from '../proxy/types.ts'
import {
  clientAuth,
  oauthClient,
  parseClientRecord,
  preRegisteredClient,
  registerClient,
  type ClientRecord,
} from './client.ts'
import {callOptions, resolveServer, type ResolvedServer} from './discovery.ts'
import {deviceLogin} from './device-login.ts'
import {chooseLoginFlow} from './login-flow.ts'
import {interactiveLogin, type LoginResult} from './login.ts'
import type {OAuthHttp} from './oauth-http.ts'
import {oauthErrorCode, toOAuthError} from './oauth-errors.ts'
import type {ProgressSink} from './progress.ts'
import {OIDC_DEFAULT_SCOPES, type RemoteAuthOptions} from './remote-auth-options.ts'
import {
  grantMismatch,
  parseStoredRefresh,
  sameGrant,
  storeNames,
  type StoreNames,
  type TokenStore,
} from './token-store.ts'

export interface TokenSourceDeps {
  http: OAuthHttp
  store: TokenStore
  progress: ProgressSink
  openBrowser: (url: string) => Promise<void>
  logger?: Logger
  now?: () => number
  /** After a failed background login, how long before a client request may start another. */
  reloginIntervalMs?: number
  /** After a refresh failed for a passing reason (network, 5xx), how long before trying again. */
  refreshBackoffMs?: number
  /**
   * How long a request that arrives while start() restores the saved login (discovery, refresh)
   * waits for it before getting ERR_NO_UPSTREAM_TOKEN; default 30 s.
   */
  startWaitMs?: number
}

/** Default bound on a request's wait for the saved login to be restored at startup. */
export const START_WAIT_MS = 30_000

interface AccessToken {
  token: string
  /** The granted scope when the server said (RFC 6749 §5.1), else the requested one. */
  scope: string
  /** Epoch ms after which the token is not used; Infinity when the server gave no expires_in. */
  expiresAt: number
  /** How long before expiry it is refreshed. */
  skewMs: number
}

const noToken = (message: string, cause?: unknown) =>
  new ToolgateError('ERR_NO_UPSTREAM_TOKEN', message, cause === undefined ? undefined : {cause})

/**
 * The upstream credential of `toolgate proxy --remote-auth` (contract §3). `start()` finds the
 * authorization server and gets a first token: from a saved refresh token when there is one (no
 * browser), else by an interactive login. Afterwards `getToken` hands out the access token,
 * refreshing it shortly before expiry with one refresh for any number of concurrent callers.
 * A dead refresh token or a revoked registration leads to one new (background) login — a person
 * has to act, so it is never retried in a loop; meanwhile callers get ERR_NO_UPSTREAM_TOKEN, which
 * the proxy answers with 503 and Retry-After. The proxy listens before `start()` (so a busy port is
 * reported before anyone logs in): while `start()` discovers the server and restores a saved login
 * (no person involved), `getToken` waits for it (at most `startWaitMs`, 30 s); only once an
 * interactive login is pending, or start() failed, does it answer ERR_NO_UPSTREAM_TOKEN at once.
 */
export class RemoteOAuthTokenSource implements UpstreamTokenSource {
  readonly #options: RemoteAuthOptions
  readonly #deps: TokenSourceDeps
  readonly #now: () => number
  readonly #abort = new AbortController()
  #server: ResolvedServer | undefined
  #names: StoreNames | undefined
  #client: ClientRecord | undefined
  #access: AccessToken | undefined
  #refreshToken: string | undefined
  #refreshing: Promise<void> | undefined
  #nextRefreshAt = 0
  #login: Promise<void> | undefined
  #lastLoginFailureAt = -Infinity
  /** Set when start() has finished; before that only start() may refresh or log in. */
  #started = false
  /** Settled when start() has a token, needs a person (interactive login), or failed. */
  #settle!: () => void
  readonly #settled = new Promise<void>((resolve) => (this.#settle = resolve))
  #needsPerson = false
  #closing: Promise<void> | undefined
  /** Counters for tests and debug logs: how many refresh and login round trips really happened. */
  readonly stats = {refreshes: 0, logins: 0, registrations: 0}

  constructor(options: RemoteAuthOptions, deps: TokenSourceDeps) {
    this.#options = options
    this.#deps = deps
    this.#now = deps.now ?? Date.now
  }

  get issuer(): string | undefined {
    return this.#server?.as.issuer
  }

  /** Discovery, then a saved login or an interactive one. Throws when no token can be had. */
  async start(): Promise<void> {
    try {
      await this.#start()
    } finally {
      this.#settle()
    }
  }

  async #start(): Promise<void> {
    const server = await resolveServer(
      {
        targetUri: this.#options.targetUri,
        issuer: this.#options.issuer,
        authorizeUrl: this.#options.authorizeUrl,
        tokenUrl: this.#options.tokenUrl,
      },
      this.#deps.http,
    )
    this.#server = server
    this.#names = storeNames(this.#options.targetUri.href, server.as.issuer)
    this.#deps.progress({event: 'discovered', issuer: server.as.issuer, via: server.via})

    if (this.#options.clientId) {
      this.#client = preRegisteredClient(
        this.#options.clientId,
        this.#options.clientSecret,
        server.as,
      )
    } else {
      const stored = await this.#deps.store.get(this.#names.client)
      this.#client = parseClientRecord(stored)
      // Records saved by earlier versions also held the unused RFC 7592 registration access token.
      if (this.#client && stored && JSON.parse(stored).registration_access_token !== undefined) {
        await this.#deps.store.set(this.#names.client, JSON.stringify(this.#client))
      }
    }
    const saved = parseStoredRefresh(await this.#deps.store.get(this.#names.refresh))
    if (
      saved &&
      this.#client &&
      saved.client_id === this.#client.client_id &&
      saved.issuer === server.as.issuer
    ) {
      if (!sameGrant(saved, this.#scopes(), this.#resource())) {
        // Reusing it would silently keep the old scopes/audience (a refresh cannot widen them,
        // RFC 6749 §6; RFC 8707 §2.2): log in again and say why.
        this.#deps.progress({
          event: 'login_required',
          reason: grantMismatch(saved, this.#scopes(), this.#resource()),
        })
      } else {
        this.#refreshToken = saved.refresh_token
        try {
          await this.#refresh()
          this.#deps.progress({event: 'restored', issuer: server.as.issuer})
          this.#started = true
          return
        } catch (err) {
          // A dead grant or client was already forgotten by #refresh; anything else stops here.
          if (this.#refreshToken !== undefined) throw err
          this.#deps.progress({event: 'login_required', reason: (err as Error).message})
        }
      }
    }
    // A person has to act now: requests no longer wait (503 + Retry-After until the login ends).
    this.#needsPerson = true
    this.#settle()
    await this.#interactive()
    this.#started = true
  }

  async getToken(signal?: AbortSignal): Promise<string> {
    if (!this.#started && !this.#needsPerson) await this.#waitForStart(signal)
    if (!this.#started)
      throw noToken('the remote login has not finished yet (see the proxy output)')
    const access = this.#access
    if (access && this.#now() < access.expiresAt - access.skewMs) return access.token
    if (this.#refreshToken !== undefined) {
      if (this.#refreshing === undefined && this.#now() < this.#nextRefreshAt) {
        throw noToken('the last token refresh failed moments ago; retrying shortly')
      }
      try {
        await this.#refreshOnce(signal)
        if (this.#access) return this.#access.token
      } catch (err) {
        if (this.#refreshToken !== undefined)
          throw isToolgateError(err, 'ERR_NO_UPSTREAM_TOKEN')
            ? err
            : noToken('token refresh failed', err)
        this.#backgroundLogin((err as Error).message)
        throw noToken(`no upstream token: ${(err as Error).message}`)
      }
    }
    // A token that is close to expiry but still valid is better than none while a login runs.
    if (access && this.#now() < access.expiresAt) return access.token
    this.#backgroundLogin('the access token expired and there is no refresh token')
    throw noToken('no upstream token: a new login is needed (see the proxy output)')
  }

  /** Waits (bounded, and no longer than the caller) for start() to settle; never throws. */
  async #waitForStart(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return
    let timer: NodeJS.Timeout | undefined
    let onAbort: (() => void) | undefined
    await Promise.race([
      this.#settled,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, this.#deps.startWaitMs ?? START_WAIT_MS)
        timer.unref()
      }),
      new Promise<void>((resolve) => {
        onAbort = resolve
        signal?.addEventListener('abort', onAbort, {once: true})
      }),
    ])
    clearTimeout(timer)
    if (onAbort) signal?.removeEventListener('abort', onAbort)
  }

  /** Expiry and scope of the current access token (for `toolgate auth token --json`). */
  tokenInfo(): {expiresAt?: number; scope?: string} {
    const a = this.#access
    if (!a) return {}
    return {...(Number.isFinite(a.expiresAt) ? {expiresAt: a.expiresAt} : {}), scope: a.scope}
  }

  /** The upstream said 401 to `rejected`: one refresh, unless another request already did it. */
  async onUnauthorized(rejected: string, signal?: AbortSignal): Promise<string | undefined> {
    if (this.#access && this.#access.token !== rejected) return this.#access.token
    if (this.#access?.token === rejected) this.#access = undefined
    try {
      return await this.getToken(signal)
    } catch {
      return undefined
    }
  }

  /** Stops a login in progress and releases the HTTP clients; safe to call more than once. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#abort.abort(new ToolgateError('ERR_OAUTH_FLOW', 'the proxy is shutting down'))
      await this.#login?.catch(() => {})
      await this.#deps.http.close()
    })()
    return this.#closing
  }

  #refreshOnce(signal?: AbortSignal): Promise<void> {
    this.#refreshing ??= this.#refresh().finally(() => {
      this.#refreshing = undefined
    })
    if (!signal) return this.#refreshing
    // A caller that gives up does not cancel the shared refresh.
    return Promise.race([
      this.#refreshing,
      new Promise<never>((_, reject) =>
        signal.addEventListener('abort', () => reject(signal.reason), {once: true}),
      ),
    ])
  }

  async #refresh(): Promise<void> {
    const server = this.#server as ResolvedServer
    const client = this.#client as ClientRecord
    const refreshToken = this.#refreshToken as string
    this.stats.refreshes++
    let tokens: oauth.TokenEndpointResponse
    try {
      const response = await oauth.refreshTokenGrantRequest(
        server.as,
        oauthClient(client),
        clientAuth(client),
        refreshToken,
        {
          ...callOptions(server.as.token_endpoint, this.#tokenFetch()),
          signal: this.#abort.signal,
          // RFC 8707 §2.2: the resource goes on refresh requests too.
          ...(this.#resource()
            ? {additionalParameters: {resource: this.#resource() as string}}
            : {}),
        },
      )
      tokens = await oauth.processRefreshTokenResponse(server.as, oauthClient(client), response)
    } catch (err) {
      const code = oauthErrorCode(err)
      const names = this.#names as StoreNames
      if (code === 'invalid_grant') {
        // RFC 6749 §5.2: the refresh token is invalid, expired or revoked; only a login helps.
        this.#refreshToken = undefined
        await this.#deps.store.delete(names.refresh)
        throw noToken(
          'the saved login has expired or was revoked; a new browser login is needed',
          err,
        )
      }
      if (code === 'invalid_client' || code === 'unauthorized_client') {
        this.#refreshToken = undefined
        await this.#deps.store.delete(names.refresh)
        if (client.dynamic) {
          // The registration was deleted or revoked: register again on the next login.
          this.#client = undefined
          await this.#deps.store.delete(names.client)
          throw noToken(
            'the authorization server no longer accepts the registered client; registering again and logging in',
            err,
          )
        }
        throw toOAuthError(
          err,
          'token refresh (check --remote-auth-client-id and the client secret)',
        )
      }
      this.#nextRefreshAt = this.#now() + (this.#deps.refreshBackoffMs ?? 2000)
      this.#deps.logger?.warn('remote token refresh failed', {
        issuer: server.as.issuer,
        reason: toOAuthError(err, 'refresh').message,
      })
      throw noToken(toOAuthError(err, 'token refresh').message, err)
    }
    await this.#accept(tokens, client)
    this.#deps.logger?.debug('remote access token refreshed', {issuer: server.as.issuer})
  }

  async #accept(tokens: oauth.TokenEndpointResponse, client: ClientRecord): Promise<void> {
    const now = this.#now()
    const lifeMs =
      typeof tokens.expires_in === 'number' && tokens.expires_in > 0
        ? tokens.expires_in * 1000
        : Infinity
    this.#access = {
      token: tokens.access_token,
      scope: typeof tokens.scope === 'string' ? tokens.scope : this.#scopes().join(' '),
      expiresAt: now + lifeMs,
      // A quarter of the life, at least 1 s (expires_in and exp are whole seconds, so a token can
      // be up to a second shorter-lived than it looks), at most 30 s, never more than half.
      skewMs: Number.isFinite(lifeMs)
        ? Math.min(30_000, lifeMs / 2, Math.max(1000, lifeMs / 4))
        : 0,
    }
    const names = this.#names as StoreNames
    // RFC 6749 §6: the server may rotate the refresh token; keep the newest.
    if (tokens.refresh_token) {
      this.#refreshToken = tokens.refresh_token
      await this.#deps.store.set(
        names.refresh,
        JSON.stringify({
          refresh_token: tokens.refresh_token,
          client_id: client.client_id,
          issuer: (this.#server as ResolvedServer).as.issuer,
          // What the grant was asked for, so a later start with other flags logs in again.
          scopes: this.#scopes(),
          ...(this.#resource() !== undefined ? {resource: this.#resource()} : {}),
          saved_at: new Date(now).toISOString(),
        }),
      )
    }
  }

  #tokenFetch() {
    return (this.#server as ResolvedServer).learned
      ? this.#deps.http.learned
      : this.#deps.http.trusted
  }

  #resource(): string | undefined {
    return this.#options.resource ?? this.#server?.resource
  }

  #scopes(): string[] {
    if (this.#options.scopes) return this.#options.scopes
    const server = this.#server as ResolvedServer
    if (server.resourceScopes)
      return server.oidc
        ? [...new Set([...OIDC_DEFAULT_SCOPES, ...server.resourceScopes])]
        : server.resourceScopes
    return server.oidc ? OIDC_DEFAULT_SCOPES : []
  }

  /** One interactive login, re-registering once if the saved registration turns out dead. */
  async #interactive(): Promise<void> {
    const server = this.#server as ResolvedServer
    const names = this.#names as StoreNames
    // Decided now, with the server's metadata: `auto` needs to know whether it offers RFC 8628.
    const flow = chooseLoginFlow(this.#options, server)
    const getClient = async (redirectUri: string | undefined): Promise<ClientRecord> => {
      const current = this.#client
      const fits = redirectUri ? current?.redirect_uri === redirectUri : current?.device === true
      if (current && (!current.dynamic || fits)) return current
      const registered = await registerClient(
        server,
        redirectUri,
        server.learned ? this.#deps.http.learned : this.#deps.http.trusted,
      )
      this.stats.registrations++
      this.#client = registered
      await this.#deps.store.set(names.client, JSON.stringify(registered))
      this.#deps.progress({
        event: 'registered',
        issuer: server.as.issuer,
        client_id: registered.client_id,
      })
      return registered
    }
    const login = (): Promise<LoginResult> =>
      flow === 'device'
        ? deviceLogin(
            {scopes: this.#scopes(), ...(this.#resource() ? {resource: this.#resource()} : {})},
            {
              server,
              fetch: this.#tokenFetch(),
              client: () => getClient(undefined),
              progress: this.#deps.progress,
              signal: this.#abort.signal,
            },
          )
        : interactiveLogin(
            {
              callbackPort: this.#options.callbackPort,
              scopes: this.#scopes(),
              scopeParamName: this.#options.scopeParamName,
              resource: this.#resource(),
              timeoutMs: this.#options.timeoutMs,
              skipBrowser: this.#options.skipBrowser,
            },
            {
              server,
              fetch: this.#tokenFetch(),
              client: (uri: string) => getClient(uri),
              openBrowser: this.#deps.openBrowser,
              progress: this.#deps.progress,
              signal: this.#abort.signal,
            },
          )
    this.stats.logins++
    let result: LoginResult
    try {
      result = await login()
    } catch (err) {
      if (oauthErrorCode(err) !== 'invalid_client' || !this.#client?.dynamic) throw err
      // The saved registration was rejected at the token endpoint: forget it and go once more.
      this.#client = undefined
      await this.#deps.store.delete(names.client)
      this.#deps.progress({
        event: 'login_required',
        reason:
          'the authorization server rejected the saved client registration; registering again',
      })
      this.stats.logins++
      result = await login()
    }
    await this.#accept(result.tokens, result.client)
    this.#deps.progress({
      event: 'logged_in',
      issuer: server.as.issuer,
      ...(result.subject ? {subject: result.subject} : {}),
    })
  }

  #backgroundLogin(reason: string): void {
    if (this.#login || this.#abort.signal.aborted || !this.#server) return
    if (this.#now() - this.#lastLoginFailureAt < (this.#deps.reloginIntervalMs ?? 300_000)) return
    this.#deps.progress({event: 'login_required', reason})
    this.#login = this.#interactive()
      .catch((err: unknown) => {
        this.#lastLoginFailureAt = this.#now()
        const e = isToolgateError(err) ? err : toOAuthError(err, 'login')
        this.#deps.progress({event: 'login_failed', code: e.code, message: e.message})
      })
      .finally(() => {
        this.#login = undefined
      })
  }
}
