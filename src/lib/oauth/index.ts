import open from 'open'
import {ToolgateError} from '../errors.ts'
import type {Logger} from '../log/logger.ts'
import type {SecretStore} from '../secrets/types.ts'
import {createOAuthHttp, type OAuthHttp} from './oauth-http.ts'
import {isPrivateDestination} from './private-address.ts'
import {createProgressRenderer, type ProgressSink} from './progress.ts'
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
  source: RemoteOAuthTokenSource
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
  const options = await remoteAuthOptionsFromFlags(flags, targetUri, {env: deps.env ?? process.env})
  if (!options) return undefined
  const progress = createProgressRenderer({write: deps.write, json: deps.json, isTTY: deps.isTTY})
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
