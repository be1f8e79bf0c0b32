import {createRemoteJWKSet, customFetch, type JWTVerifyGetKey} from 'jose'
import {ToolgateError} from '../errors.ts'
import type {OutboundClient} from '../http/outbound.ts'

/**
 * Where a provider's signing keys come from (contract §1 "JWT"): `jwksUrl` when configured, else
 * the `jwks_uri` of `{issuerUrl}/.well-known/openid-configuration`. Discovery happens lazily and is
 * retried on the next token after a failure, so a provider that is down at startup is picked up
 * without a restart.
 *
 * Keys are cached by jose's remote JWKS set, which fetches through our guarded client (jose 6
 * `customFetch`): a token with an unknown `kid` triggers one refetch, at most once per cooldown,
 * which is how key rotation works without a restart and without letting junk `kid`s hammer the
 * provider. Cached keys expire after `cacheMaxAgeMs` so a removed key stops being trusted.
 */
export interface KeySourceOptions {
  issuerUrl: string
  jwksUrl?: string | undefined
  /** Client for URLs the operator configured (discovery document, jwksUrl). */
  configured: OutboundClient
  /** Client for URLs learned from a remote document (jwks_uri). */
  learned: OutboundClient
  /** Bearer credential for discovery and JWKS requests (authTokenFile), read per request. */
  bearer?: (() => string) | undefined
  cooldownMs: number
  cacheMaxAgeMs: number
}

/** What `auth explain` reports about a provider's keys: where they came from and when. */
export interface KeySnapshot {
  /** The JWKS URL in use (configured, or learned from discovery); undefined before discovery. */
  jwksUrl: string | undefined
  /** Milliseconds since the epoch of the last successful JWKS fetch. */
  fetchedAt: number | undefined
  /** `kid` (and `alg`) of every key in the cached set. */
  keys: Array<{kid: string | undefined; alg: string | undefined; kty: string | undefined}>
}

export interface KeySource {
  getKey: JWTVerifyGetKey
  snapshot(): KeySnapshot
}

export function discoveryUrlOf(issuerUrl: string): string {
  // OpenID Connect Discovery 1.0 §4: a trailing "/" of the issuer is removed before appending.
  return issuerUrl.replace(/\/$/, '') + '/.well-known/openid-configuration'
}

export function createKeySource(opts: KeySourceOptions): KeySource {
  let jwks: ReturnType<typeof createRemoteJWKSet> | undefined
  let pending: Promise<ReturnType<typeof createRemoteJWKSet>> | undefined
  let jwksUrl: string | undefined
  let fetchedAt: number | undefined

  const headers = (): Record<string, string> => {
    const h: Record<string, string> = {accept: 'application/json'}
    const bearer = opts.bearer?.()
    if (bearer !== undefined) h.authorization = `Bearer ${bearer}`
    return h
  }

  const build = (url: URL, client: OutboundClient) => {
    jwksUrl = url.href
    return createRemoteJWKSet(url, {
      timeoutDuration: client.timeoutMs,
      cooldownDuration: opts.cooldownMs,
      cacheMaxAge: opts.cacheMaxAgeMs,
      [customFetch]: (async (href: string, init: {headers: Headers; signal: AbortSignal}) => {
        const h: Record<string, string> = {}
        init.headers.forEach((v, k) => (h[k] = v))
        const res = await client.fetch(href, {
          headers: {...h, ...headers()},
          signal: init.signal,
          redirect: 'manual',
        })
        if (res.status === 200) fetchedAt = Date.now()
        return res as unknown as Response
      }) as never,
    })
  }

  const resolve = async (): Promise<ReturnType<typeof createRemoteJWKSet>> => {
    if (opts.jwksUrl !== undefined) return build(new URL(opts.jwksUrl), opts.configured)
    const url = discoveryUrlOf(opts.issuerUrl)
    const res = await opts.configured.fetchJson(url, {headers: headers()})
    const host = new URL(url).host
    if (res.status !== 200)
      throw unreachable(`discovery document at ${host} answered HTTP ${res.status}`)
    const doc = res.body as {issuer?: unknown; jwks_uri?: unknown} | undefined
    if (!doc || typeof doc !== 'object')
      throw unreachable(`discovery document at ${host} is not a JSON object`)
    // OpenID Connect Discovery 1.0 §4.3: the document's issuer must equal the issuer it was fetched for.
    if (doc.issuer !== opts.issuerUrl)
      throw unreachable(`discovery document at ${host} names a different issuer`)
    if (typeof doc.jwks_uri !== 'string')
      throw unreachable(`discovery document at ${host} has no jwks_uri`)
    let jwksUri: URL
    try {
      jwksUri = new URL(doc.jwks_uri)
    } catch {
      throw unreachable(`discovery document at ${host} has an invalid jwks_uri`)
    }
    const issuerScheme = new URL(opts.issuerUrl).protocol
    if (
      jwksUri.protocol !== 'https:' &&
      !(jwksUri.protocol === 'http:' && issuerScheme === 'http:')
    ) {
      throw unreachable(`discovery document at ${host} has a jwks_uri that is not https`)
    }
    return build(jwksUri, opts.learned)
  }

  return {
    async getKey(header, token) {
      if (!jwks) {
        pending ??= resolve().finally(() => (pending = undefined))
        jwks = await pending
      }
      return jwks(header, token)
    },
    snapshot() {
      const set = jwks?.jwks()
      return {
        jwksUrl,
        fetchedAt,
        keys: (set?.keys ?? []).map((k) => ({kid: k.kid, alg: k.alg, kty: k.kty})),
      }
    },
  }
}

function unreachable(message: string): ToolgateError {
  return new ToolgateError('ERR_AUTH_PROVIDER_UNREACHABLE', message)
}
