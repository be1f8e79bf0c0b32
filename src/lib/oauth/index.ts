import open from 'open'
import {ToolgateError} from '../errors.ts'
import type {Logger} from '../log/logger.ts'
import type {SecretStore} from '../secrets/types.ts'
import type {UpstreamTokenSource} from '../proxy/types.ts'
import {ClientCredentialsTokenSource, loadClientKey} from './client-credentials.ts'
import {resolveServer} from './discovery.ts'
import {createOAuthHttp, type OAuthHttp} from './oauth-http.ts'
import {isPrivateDestination} from './private-address.ts'
import {createProgressRenderer, type ProgressSink} from './progress.ts'
import type {createProgressRenderer as Renderer} from './progress.ts'
import {
  remoteAuthOptionsFromFlags,
  type RemoteAuthFlags,
  type RemoteAuthOptions,
} from './remote-auth-options.ts'
import {secretTokenStore} from './secret-token-store.ts'
import {RemoteOAuthTokenSource} from './token-source.ts'
import type {TokenStore} from './token-store.ts'

export {
  remoteAuthOptionsFromFlags,
  DEFAULT_CALLBACK_PORT,
  DEFAULT_TIMEOUT,
  type RemoteAuthFlags,
  type RemoteAuthOptions,
} from './remote-auth-options.ts'
export {createProgressRenderer, type RemoteAuthEvent} from './progress.ts'
export {secretTokenStore} from './secret-token-store.ts'
export {MemoryTokenStore, STORE_PREFIX, type TokenStore} from './token-store.ts'
export {RemoteOAuthTokenSource} from './token-source.ts'

/** Opens the system browser; a failure to start one rejects so the URL gets printed instead. */
export async function openSystemBrowser(url: string): Promise<void> {
  const child = await open(url, {wait: false})
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject)
    // xdg-open and friends exit non-zero at once when there is no browser to start.
    child.once('exit', (code) =>
      code ? reject(new Error(`browser opener exited with ${code}`)) : resolve(),
    )
    setTimeout(resolve, 1500).unref()
  })
  child.unref()
}

export interface RemoteAuthDeps {
  store: TokenStore
  progress: ProgressSink
  logger?: Logger
  openBrowser?: (url: string) => Promise<void>
  http?: OAuthHttp
  now?: () => number
  reloginIntervalMs?: number
}

/**
 * Builds the remote OAuth token source without contacting anyone: `start()` (discovery, then the
 * saved or the browser login) is the caller's next step, after it has bound its port. Until then
 * the source answers ERR_NO_UPSTREAM_TOKEN (the proxy's 503 with Retry-After).
 */
export async function prepareRemoteAuth(
  options: RemoteAuthOptions,
  deps: RemoteAuthDeps,
): Promise<RemoteOAuthTokenSource> {
  // Contract §2: what remote documents teach may lead to private addresses only when the
  // operator's own starting URL (issuer, else target) is on one.
  const root = options.issuer ?? options.targetUri
  const http = deps.http ?? createOAuthHttp({allowPrivateLearned: await isPrivateDestination(root)})
  return new RemoteOAuthTokenSource(options, {
    http,
    store: deps.store,
    progress: deps.progress,
    openBrowser: deps.openBrowser ?? openSystemBrowser,
    ...(deps.logger ? {logger: deps.logger} : {}),
    ...(deps.now ? {now: deps.now} : {}),
    ...(deps.reloginIntervalMs !== undefined ? {reloginIntervalMs: deps.reloginIntervalMs} : {}),
  })
}

/**
 * Builds and starts the remote OAuth token source: resolves the authorization server, restores a
 * saved login or runs the browser login. Rejects (and releases everything) when no first token can
 * be had.
 */
export async function startRemoteAuth(
  options: RemoteAuthOptions,
  deps: RemoteAuthDeps,
): Promise<RemoteOAuthTokenSource> {
  const source = await prepareRemoteAuth(options, deps)
  try {
    await source.start()
  } catch (err) {
    await source.close()
    throw err
  }
  return source
}

export interface RemoteAuthFromFlagsDeps {
  logger: Logger
  /** Opens the secrets store (lazily: only when --remote-auth is on). */
  openStore: () => Promise<SecretStore>
  /** stderr writer for progress; `json` switches to JSON-lines events. */
  write: (text: string) => void
  json: boolean
  isTTY: boolean
  env?: NodeJS.ProcessEnv
}

export interface RemoteAuth {
  /** The upstream token source; hand it to the proxy before it listens. */
  source: UpstreamTokenSource & {
    close(): Promise<void>
    tokenInfo(): {expiresAt?: number; scope?: string}
  }
  /**
   * Discovery, then the saved or the browser login, with progress on stderr. Rejects when no first
   * token can be had; the caller then closes what it started (closing the proxy closes `source`).
   */
  login(): Promise<void>
}

/**
 * The whole `--remote-auth*` wiring for a command: flags → options (usage errors first) and the
 * secrets store now; the login when the caller is ready for it, i.e. after binding its port, so a
 * busy port is reported before anyone is sent to a browser. Undefined when `--remote-auth` is off.
 */
export async function remoteAuthFromFlags(
  flags: RemoteAuthFlags,
  targetUri: string,
  deps: RemoteAuthFromFlagsDeps,
): Promise<RemoteAuth | undefined> {
  const options = await remoteAuthOptionsFromFlags(flags, targetUri, {
    env: deps.env ?? process.env,
    tty: deps.isTTY || process.stdin.isTTY === true,
    readSecret: async (name) => (await deps.openStore()).require(name),
  })
  if (!options) return undefined
  const progress = createProgressRenderer({write: deps.write, json: deps.json, isTTY: deps.isTTY})
  if (options.grant === 'client_credentials') return clientCredentialsAuth(options, progress)
  const source = await prepareRemoteAuth(options, {
    store: secretTokenStore(await deps.openStore(), deps.logger),
    progress,
    logger: deps.logger,
  })
  return {
    source,
    async login() {
      try {
        await source.start()
      } catch (err) {
        if (err instanceof ToolgateError)
          progress({event: 'login_failed', code: err.code, message: err.message})
        throw err
      } finally {
        progress.stop()
      }
    },
  }
}

/**
 * `--remote-auth-grant client_credentials`: no person, no browser, no saved state — the client
 * authenticates itself for each token (client_secret_basic, or private_key_jwt with the key file).
 * `login()` gets the first token, so bad credentials stop the command at startup.
 */
async function clientCredentialsAuth(
  options: RemoteAuthOptions,
  progress: ReturnType<typeof Renderer>,
): Promise<RemoteAuth> {
  const root = options.issuer ?? options.targetUri
  const http = createOAuthHttp({allowPrivateLearned: await isPrivateDestination(root)})
  const credential = options.clientKeyFile
    ? {kind: 'private_key_jwt' as const, ...(await loadClientKey(options.clientKeyFile))}
    : {kind: 'client_secret_basic' as const, secret: options.clientSecret as string}
  let server: ReturnType<typeof resolveServer> | undefined
  const resolve = () =>
    (server ??= resolveServer(
      {
        targetUri: options.targetUri,
        ...(options.issuer ? {issuer: options.issuer} : {}),
        ...(options.authorizeUrl ? {authorizeUrl: options.authorizeUrl} : {}),
        ...(options.tokenUrl ? {tokenUrl: options.tokenUrl} : {}),
      },
      http,
    ).catch((err: unknown) => {
      server = undefined
      throw err
    }))
  const cc = new ClientCredentialsTokenSource(
    {
      clientId: options.clientId as string,
      credential,
      ...(options.scopes ? {scopes: options.scopes} : {}),
      ...(options.resource ? {resource: options.resource} : {}),
    },
    {
      server: resolve,
      // Endpoints learned from remote documents go through the guarded client (contract §2).
      fetch: (s) => (s.learned ? http.learned : http.trusted),
    },
  )
  const source = Object.assign(cc, {
    close: async () => {
      await ClientCredentialsTokenSource.prototype.close.call(cc)
      await http.close()
    },
  })
  return {
    source,
    async login() {
      try {
        const s = await resolve()
        progress({event: 'discovered', issuer: s.as.issuer, via: s.via})
        await cc.getToken()
        progress({event: 'logged_in', issuer: s.as.issuer, subject: options.clientId as string})
      } catch (err) {
        if (err instanceof ToolgateError)
          progress({event: 'login_failed', code: err.code, message: err.message})
        throw err
      } finally {
        progress.stop()
      }
    },
  }
}

export interface AccessTokenResult {
  token: string
  /** ISO time, when the server gave `expires_in`. */
  expiresAt?: string
  scopes: string[]
}

/**
 * `toolgate auth token`: the remote login of `--remote-auth*` (a saved one reused, refreshed when
 * needed, or a new one by the chosen flow or grant), then one fresh access token for scripts.
 */
export async function obtainAccessToken(
  flags: RemoteAuthFlags,
  targetUri: string,
  deps: RemoteAuthFromFlagsDeps,
): Promise<AccessTokenResult> {
  const auth = await remoteAuthFromFlags({...flags, 'remote-auth': true}, targetUri, deps)
  if (!auth) throw new ToolgateError('ERR_INTERNAL', 'remote auth was not configured')
  try {
    await auth.login()
    const token = await auth.source.getToken()
    const info = auth.source.tokenInfo()
    return {
      token,
      ...(info.expiresAt !== undefined ? {expiresAt: new Date(info.expiresAt).toISOString()} : {}),
      scopes: info.scope ? info.scope.split(' ').filter(Boolean) : [],
    }
  } finally {
    await auth.source.close()
  }
}
