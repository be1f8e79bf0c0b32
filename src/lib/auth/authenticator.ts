import {decodeJwt, decodeProtectedHeader} from 'jose'
import type {LookupFunction} from 'node:net'
import {ToolgateError} from '../errors.ts'
import {DEFAULT_OUTBOUND_TIMEOUT_MS} from '../http/outbound.ts'
import type {Logger} from '../log/logger.ts'
import {parseAuthorization} from './bearer-header.ts'
import {
  createProviderValidator,
  type ProviderValidator,
  type Verdict,
} from './provider-validator.ts'
import type {ReasonCode} from './reasons.ts'
import {createResultCache, tokenCacheKey} from './result-cache.ts'
import type {KeySnapshot} from './key-source.ts'
import type {AuthOutcome, BearerAuthenticator, OAuthConfig, ProviderConfig} from './types.ts'

export interface AuthenticatorDeps {
  logger: Logger
  /** Outbound timeout for discovery, JWKS and introspection (default 5 s). */
  timeoutMs?: number
  /** Minimum gap between two JWKS refetches caused by an unknown `kid` (default 30 s). */
  jwksCooldownMs?: number
  /** Maximum age of cached JWKS keys (default 10 min). */
  jwksCacheMaxAgeMs?: number
  /** Result cache size (default 10 000 tokens; 0 disables the cache). */
  cacheMaxEntries?: number
  /** Upper bound for caching a JWT acceptance (default 5 min; always also bounded by `exp`). */
  jwtCacheTtlMs?: number
  /** Upper bound for caching an introspection acceptance (default 30 s). */
  introspectionCacheTtlMs?: number
  /** Tokens longer than this are refused before any parsing (default 16 KiB). */
  maxTokenLength?: number
  /** Clock, milliseconds since the epoch (tests). */
  now?: () => number
  /** DNS lookup for outbound calls (tests). */
  lookup?: LookupFunction
  /** Where the providers sit in the config, for error messages (default `auth.oauth.providers`). */
  configPath?: string
  /**
   * Told every step of a validation as it happens (`toolgate auth explain` reports them); the
   * servers leave it unset. Events carry provider names and verdicts, never the token.
   */
  trace?: (event: TraceEvent) => void
}

export type TraceEvent =
  | {kind: 'skipped'; provider: string; why: 'issuer' | 'no-introspection'}
  | {
      kind: 'verdict'
      provider: string
      step: 'jwt' | 'introspection'
      verdict: Verdict
      keys?: KeySnapshot | undefined
    }

const DESCRIPTIONS = {
  invalid: 'invalid token',
  expired: 'token expired',
  tooLarge: 'token too large',
  unavailable: 'token could not be validated',
} as const

/**
 * The bearer-token validator for `serve`, `proxy` and `run` (contract §1, §2). Providers are tried
 * in order; the first to accept wins.
 *
 * Format detection: a token with the JWS compact shape is offered to the providers whose issuer
 * equals its (unverified) `iss`, so tokens never travel to unrelated providers and hostile tokens
 * naming an unknown issuer cost no outbound call. Such a provider verifies it as a JWT and, when
 * its keys cannot judge it (no matching key, non-asymmetric alg, keys unreachable) and it has an
 * introspection endpoint, falls back to RFC 7662 introspection. Any other token is opaque and is
 * introspected by each provider with an introspection endpoint, in order.
 */
export function createBearerAuthenticator(
  config: OAuthConfig,
  deps: AuthenticatorDeps,
): BearerAuthenticator {
  const log = deps.logger
  const nowMs = deps.now ?? Date.now
  const where = deps.configPath ?? 'auth.oauth.providers'
  const maxTokenLength = deps.maxTokenLength ?? 16 * 1024
  const validators: ProviderValidator[] = []
  try {
    config.providers.forEach((p, i) => {
      checkProviderShape(p, `${where}[${i}]`)
      validators.push(
        createProviderValidator(p, `${where}[${i}]`, {
          timeoutMs: deps.timeoutMs ?? DEFAULT_OUTBOUND_TIMEOUT_MS,
          jwksCooldownMs: deps.jwksCooldownMs ?? 30_000,
          jwksCacheMaxAgeMs: deps.jwksCacheMaxAgeMs ?? 600_000,
          jwtCacheTtlMs: deps.jwtCacheTtlMs ?? 300_000,
          introspectionCacheTtlMs: deps.introspectionCacheTtlMs ?? 30_000,
          now: () => Math.floor(nowMs() / 1000),
          lookup: deps.lookup,
        }),
      )
    })
  } catch (err) {
    void Promise.all(validators.map((v) => v.close()))
    throw err
  }
  if (validators.length === 0)
    throw new ToolgateError('ERR_CONFIG_INVALID', `${where}: at least one provider is required`)

  const cache = createResultCache(deps.cacheMaxEntries ?? 10_000, nowMs)
  const inFlight = new Map<string, Promise<AuthOutcome>>()
  const health = new Map<string, {reason: string; at: number}>()

  const noteVerdict = (v: ProviderValidator, verdict: Verdict) => {
    if (verdict.kind === 'unavailable') {
      const last = health.get(v.name)
      // One warning per distinct problem per 30 s: an outage must be visible, not flood the log.
      if (!last || last.reason !== verdict.reason || nowMs() - last.at > 30_000) {
        log.warn('identity provider unavailable; tokens it issued are refused', {
          provider: v.name,
          reason: verdict.reason,
        })
        health.set(v.name, {reason: verdict.reason, at: nowMs()})
      }
      return
    }
    if (health.delete(v.name)) log.info('identity provider reachable again', {provider: v.name})
    if (verdict.kind === 'reject')
      log.debug('token rejected by provider', {provider: v.name, reason: verdict.reason})
  }

  const validate = async (token: string, key: string): Promise<AuthOutcome> => {
    const verdicts: Verdict[] = []
    const trace = deps.trace
    const shape = jwsShape(token)
    if (shape) {
      for (const v of validators) {
        if (v.issuer !== '' && v.issuer !== shape.iss) {
          trace?.({kind: 'skipped', provider: v.name, why: 'issuer'})
          continue
        }
        let verdict = await v.verifyJwt(token)
        noteVerdict(v, verdict)
        trace?.({kind: 'verdict', provider: v.name, step: 'jwt', verdict, keys: v.keySnapshot()})
        if (
          (verdict.kind === 'unavailable' || (verdict.kind === 'reject' && verdict.keyProblem)) &&
          v.hasIntrospection
        ) {
          verdict = await v.introspect(token)
          noteVerdict(v, verdict)
          trace?.({kind: 'verdict', provider: v.name, step: 'introspection', verdict})
        }
        verdicts.push(verdict)
        if (verdict.kind === 'accept') return accept(key, verdict)
      }
    } else {
      for (const v of validators) {
        if (!v.hasIntrospection) {
          trace?.({kind: 'skipped', provider: v.name, why: 'no-introspection'})
          continue
        }
        const verdict = await v.introspect(token)
        noteVerdict(v, verdict)
        trace?.({kind: 'verdict', provider: v.name, step: 'introspection', verdict})
        verdicts.push(verdict)
        if (verdict.kind === 'accept') return accept(key, verdict)
      }
    }
    if (verdicts.length === 0)
      log.debug('token rejected: no provider can judge it', {shape: shape ? 'jwt' : 'opaque'})
    const description = verdicts.some((v) => v.kind === 'reject' && v.expired)
      ? DESCRIPTIONS.expired
      : verdicts.length > 0 && verdicts.every((v) => v.kind === 'unavailable')
        ? DESCRIPTIONS.unavailable
        : DESCRIPTIONS.invalid
    return {ok: false, error: 'invalid_token', description, reason: reasonOf(verdicts, shape)}
  }

  const accept = (key: string, verdict: Extract<Verdict, {kind: 'accept'}>): AuthOutcome => {
    cache.set(key, verdict.principal, verdict.expiresAt)
    log.debug('token accepted', {
      provider: verdict.principal.provider,
      sub: verdict.principal.subject,
      via: verdict.via,
    })
    return {ok: true, principal: verdict.principal}
  }

  return {
    async authenticate(authorization) {
      const header = parseAuthorization(authorization)
      if (!header.ok)
        return {
          ok: false,
          error: 'invalid_request',
          description: header.description,
          reason: header.reason,
        }
      const token = header.token
      if (token.length > maxTokenLength)
        return {
          ok: false,
          error: 'invalid_token',
          description: DESCRIPTIONS.tooLarge,
          reason: 'token_too_large',
        }
      const key = tokenCacheKey(token)
      const hit = cache.get(key)
      if (hit) return {ok: true, principal: hit}
      // Concurrent requests with the same token share one validation.
      let pending = inFlight.get(key)
      if (!pending) {
        pending = validate(token, key).finally(() => inFlight.delete(key))
        inFlight.set(key, pending)
      }
      return pending
    },
    async close() {
      cache.clear()
      await Promise.all(validators.map((v) => v.close()))
    },
  }
}

/**
 * The one code a refusal reports: an expiry wins (as in the description), then the first
 * provider's rejection; only unreachable providers give `provider_unavailable`; no provider at all
 * means the token's issuer (or, for an opaque token, introspection) is unknown.
 */
function reasonOf(verdicts: Verdict[], shape: {iss: string | undefined} | undefined): ReasonCode {
  if (verdicts.length === 0) return shape ? 'iss_unknown' : 'opaque_unsupported'
  if (verdicts.some((v) => v.kind === 'reject' && v.expired)) return 'expired'
  const reject = verdicts.find((v) => v.kind === 'reject')
  return reject?.kind === 'reject' ? reject.code : 'provider_unavailable'
}

/** The unverified `iss` of a JWS compact token, or undefined when the token is not one (opaque). */
export function jwsShape(token: string): {iss: string | undefined} | undefined {
  const parts = token.split('.')
  if (parts.length !== 3 || parts[0] === '' || parts[1] === '') return undefined
  try {
    const header = decodeProtectedHeader(token)
    if (typeof header.alg !== 'string') return undefined
    const payload = decodeJwt(token)
    return {iss: typeof payload.iss === 'string' ? payload.iss : undefined}
  } catch {
    return undefined
  }
}

function checkProviderShape(p: ProviderConfig, path: string): void {
  const bad = (field: string, why: string) =>
    new ToolgateError('ERR_CONFIG_INVALID', `${path}.${field}: ${why}`, {
      details: {path: `${path}.${field}`},
    })
  if (typeof p.name !== 'string' || p.name === '') throw bad('name', 'is required')
  if (p.issuerUrl === '' && p.jwksUrl === undefined && p.introspectionUrl === undefined) {
    throw bad('issuerUrl', 'is required unless jwksUrl or introspectionUrl is set')
  }
  for (const field of ['issuerUrl', 'jwksUrl', 'introspectionUrl'] as const) {
    const value = p[field]
    if (value === undefined || value === '') continue
    let url: URL
    try {
      url = new URL(value)
    } catch {
      throw bad(field, `"${value}" is not a URL`)
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw bad(field, 'must be an http(s) URL')
  }
  if (p.clientSecretFile !== undefined && p.clientSecret !== undefined)
    throw bad('clientSecretFile', 'set either clientSecretFile or clientSecret, not both')
}
