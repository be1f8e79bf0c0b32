import {createHash} from 'node:crypto'
import {LruCache} from '../cache/lru.ts'
import {ToolgateError, isToolgateError} from '../errors.ts'
import type {OutboundClient} from '../http/outbound.ts'
import type {Logger} from '../log/logger.ts'
import {buildExchangeRequest, processExchangeResponse, type TokenExchangeConfig} from './request.ts'

export interface TokenExchanger {
  /** Returns a token for `subjectToken`, from the cache while it is fresh. Throws ERR_TOKEN_EXCHANGE. */
  exchange(subjectToken: string): Promise<string>
  readonly config: TokenExchangeConfig
  /** Releases the connections to the exchange endpoint. */
  close(): Promise<void>
}

export interface TokenExchangerDeps {
  logger: Logger
  /**
   * How the endpoint is called; default: the guarded outbound client (src/lib/http/outbound.ts)
   * with `config.timeoutMs`. The URL was typed by the operator, so it is trusted as given,
   * loopback included (contract §2 "Outbound trust").
   */
  outbound?: Pick<OutboundClient, 'fetchJson' | 'close'>
  now?: () => number
  /** Refresh this long before `expires_in` runs out. */
  skewMs?: number
  maxEntries?: number
}

/** A token response is a few hundred bytes to a few KiB; anything larger is not one. */
export const MAX_EXCHANGE_RESPONSE = 64 * 1024

/**
 * RFC 8693 client with a per-subject cache. Keys are SHA-256 of the subject token so the cache
 * never holds the incoming credentials themselves; concurrent requests for one subject share one
 * exchange. A token without `expires_in` is not cached (we cannot know when it stops working).
 */
export function createTokenExchanger(
  config: TokenExchangeConfig,
  deps: TokenExchangerDeps,
): TokenExchanger {
  // Created at the first exchange: a process that only parses the flags (a workload without
  // token exchange imports this module) does not load the HTTP client library (issue 11).
  let outbound: Promise<Pick<OutboundClient, 'fetchJson' | 'close'>> | undefined
  const client = () =>
    (outbound ??= deps.outbound
      ? Promise.resolve(deps.outbound)
      : import('../http/outbound.ts')
          .then((m) =>
            m.createOutboundClient({
              timeoutMs: config.timeoutMs,
              allowPrivateIP: true,
              label: '--token-exchange-url',
            }),
          )
          .catch((err: unknown) => {
            outbound = undefined // a failure is not kept: the next exchange tries again
            throw err
          }))
  const now = deps.now ?? Date.now
  const skew = deps.skewMs ?? 30_000
  const cache = new LruCache<string, string>({maxEntries: deps.maxEntries ?? 10_000, now})
  const inflight = new Map<string, Promise<string>>()
  const log = deps.logger.child({component: 'token-exchange'})

  // Bounded by the client's own timeout only: concurrent requests share one exchange, so one
  // client leaving must not fail the others.
  async function fetchToken(key: string, subject: string): Promise<string> {
    const {url, init} = buildExchangeRequest(config, subject)
    let res: {status: number; body: unknown}
    try {
      res = await (await client()).fetchJson(url, {...init, maxBytes: MAX_EXCHANGE_RESPONSE})
    } catch (err) {
      const what = isToolgateError(err, 'ERR_OUTBOUND_TIMEOUT')
        ? `timed out after ${config.timeoutMs} ms`
        : isToolgateError(err)
          ? err.message
          : 'request failed'
      throw new ToolgateError('ERR_TOKEN_EXCHANGE', `token exchange: ${what}`, {cause: err})
    }
    const result = processExchangeResponse(res)
    if (result.expiresIn !== undefined) {
      const ttl = result.expiresIn * 1000 - Math.min(skew, (result.expiresIn * 1000) / 2)
      if (ttl > 0) cache.set(key, result.accessToken, now() + ttl)
    }
    log.debug('token exchanged', {expires_in: result.expiresIn})
    return result.accessToken
  }

  return {
    config,
    async exchange(subject) {
      const key = createHash('sha256').update(subject).digest('base64url')
      const hit = cache.get(key)
      if (hit !== undefined) return hit
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
    async close() {
      if (outbound) await (await outbound).close()
    },
  }
}
