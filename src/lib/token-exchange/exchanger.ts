import {createHash} from 'node:crypto'
import {ToolgateError, isToolgateError} from '../errors.ts'
import type {Logger} from '../log/logger.ts'
import {buildExchangeRequest, processExchangeResponse, type TokenExchangeConfig} from './request.ts'

export interface TokenExchanger {
  /** Returns a token for `subjectToken`, from the cache while it is fresh. Throws ERR_TOKEN_EXCHANGE. */
  exchange(subjectToken: string): Promise<string>
  readonly config: TokenExchangeConfig
}

export interface TokenExchangerDeps {
  logger: Logger
  fetch?: typeof fetch
  now?: () => number
  /** Refresh this long before `expires_in` runs out. */
  skewMs?: number
  maxEntries?: number
}

interface Entry {
  token: string
  expiresAt: number
}

/**
 * RFC 8693 client with a per-subject cache. Keys are SHA-256 of the subject token so the cache
 * never holds the incoming credentials themselves; concurrent requests for one subject share one
 * exchange. A token without `expires_in` is not cached (we cannot know when it stops working).
 */
export function createTokenExchanger(config: TokenExchangeConfig, deps: TokenExchangerDeps): TokenExchanger {
  const doFetch = deps.fetch ?? fetch
  const now = deps.now ?? Date.now
  const skew = deps.skewMs ?? 30_000
  const maxEntries = deps.maxEntries ?? 10_000
  const cache = new Map<string, Entry>()
  const inflight = new Map<string, Promise<string>>()
  const log = deps.logger.child({component: 'token-exchange'})

  // Bounded by its own timeout only: concurrent requests share one exchange, so one client
  // leaving must not fail the others.
  async function fetchToken(key: string, subject: string): Promise<string> {
    const {url, init} = buildExchangeRequest(config, subject)
    const timeout = AbortSignal.timeout(config.timeoutMs)
    let res: Response
    try {
      res = await doFetch(url, {...init, signal: timeout})
    } catch (err) {
      const what = timeout.aborted ? `timed out after ${config.timeoutMs} ms` : 'request failed'
      throw new ToolgateError('ERR_TOKEN_EXCHANGE', `token exchange: ${what}`, {cause: err})
    }
    const result = await processExchangeResponse(res)
    if (result.expiresIn !== undefined) {
      const ttl = result.expiresIn * 1000 - Math.min(skew, (result.expiresIn * 1000) / 2)
      if (ttl > 0) {
        if (cache.size >= maxEntries) cache.delete(cache.keys().next().value as string)
        cache.set(key, {token: result.accessToken, expiresAt: now() + ttl})
      }
    }
    log.debug('token exchanged', {expires_in: result.expiresIn})
    return result.accessToken
  }

  return {
    config,
    async exchange(subject) {
      const key = createHash('sha256').update(subject).digest('base64url')
      const hit = cache.get(key)
      if (hit && hit.expiresAt > now()) return hit.token
      if (hit) cache.delete(key)
      let p = inflight.get(key)
      if (!p) {
        p = fetchToken(key, subject).finally(() => inflight.delete(key))
        inflight.set(key, p)
      }
      try {
        return await p
      } catch (err) {
        if (isToolgateError(err)) log.warn('token exchange failed', {reason: err.message})
        throw err
      }
    },
  }
}
