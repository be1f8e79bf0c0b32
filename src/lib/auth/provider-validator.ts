import {errors as joseErrors, jwtVerify} from 'jose'
import type {LookupFunction} from 'node:net'
import {isToolgateError} from '../errors.ts'
import {createOutboundClient, type OutboundClient} from '../http/outbound.ts'
import {blockedRange} from '../http/ip-ranges.ts'
import {checkClaims} from './claims.ts'
import {
  introspectionRequest,
  processIntrospectionResponse,
  type IntrospectionAnswer,
} from './introspection.ts'
import {createKeySource, type KeySource, type KeySnapshot} from './key-source.ts'
import type {ReasonCode} from './reasons.ts'
import {readSecretFile, rotatingSecretFile, type RotatingSecret} from '../fs/secret-file.ts'
import type {Principal, ProviderConfig} from './types.ts'

/** Only asymmetric JWS algorithms (contract §1): `none` and HS* can never verify. */
export const ALLOWED_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
]

export type Verdict =
  | {kind: 'accept'; principal: Principal; expiresAt: number; via: 'jwt' | 'introspection'}
  | {
      kind: 'reject'
      reason: string
      code: ReasonCode
      expired?: boolean
      keyProblem?: boolean
      /** Introspection only: the answer's non-secret facts (for `auth explain`). */
      answer?: IntrospectionAnswer
    }
  | {kind: 'unavailable'; reason: string}

export interface ProviderValidatorOptions {
  timeoutMs: number
  jwksCooldownMs: number
  jwksCacheMaxAgeMs: number
  /** Upper bound of how long a JWT acceptance is cached (also bounded by `exp`). */
  jwtCacheTtlMs: number
  /** Upper bound of how long an introspection acceptance is cached. */
  introspectionCacheTtlMs: number
  /** Seconds since the epoch. */
  now: () => number
  lookup?: LookupFunction | undefined
}

export interface ProviderValidator {
  readonly name: string
  readonly issuer: string
  readonly hasIntrospection: boolean
  verifyJwt(token: string): Promise<Verdict>
  introspect(token: string): Promise<Verdict>
  /** The JWKS as last fetched (for `auth explain`); undefined when the provider has no keys. */
  keySnapshot(): KeySnapshot | undefined
  close(): Promise<void>
}

/**
 * One provider: signing keys, introspection, and the outbound clients that reach them.
 *
 * SSRF (contract §1, §2): `allowPrivateIP` opens every destination of the provider. Without it,
 * `trustConfiguredUrls` (proxy/run: URLs the operator typed) opens the configured URLs, and a URL
 * learned from discovery (`jwks_uri`) only when the configured issuer is itself on a loopback or
 * private host.
 */
export function createProviderValidator(
  config: ProviderConfig,
  where: string,
  opts: ProviderValidatorOptions,
): ProviderValidator {
  const label = `provider "${config.name}"`
  const clientSecret =
    config.clientSecret ??
    (config.clientSecretFile !== undefined
      ? readSecretFile(config.clientSecretFile, {what: `${where}.clientSecretFile (${label})`})
      : undefined)
  const authToken: RotatingSecret | undefined =
    config.authTokenFile !== undefined
      ? rotatingSecretFile(config.authTokenFile, {what: `${where}.authTokenFile (${label})`})
      : undefined

  const base = {
    timeoutMs: opts.timeoutMs,
    label,
    ...(config.caCertPath !== undefined ? {caCertPath: config.caCertPath} : {}),
    ...(opts.lookup ? {lookup: opts.lookup} : {}),
  }
  const allowAll = config.allowPrivateIP === true
  const trustConfigured = allowAll || config.trustConfiguredUrls === true
  const clients: OutboundClient[] = []
  const configured = createOutboundClient({...base, allowPrivateIP: trustConfigured})
  clients.push(configured)
  let learned = configured
  if (
    !allowAll &&
    !(config.trustConfiguredUrls === true && issuerOnPrivateHost(config.issuerUrl))
  ) {
    learned = createOutboundClient({...base, allowPrivateIP: false})
    clients.push(learned)
  }

  const keys: KeySource | undefined =
    config.jwksUrl !== undefined || config.issuerUrl !== ''
      ? createKeySource({
          issuerUrl: config.issuerUrl,
          jwksUrl: config.jwksUrl,
          configured,
          learned,
          bearer: authToken ? () => authToken.get() : undefined,
          cooldownMs: opts.jwksCooldownMs,
          cacheMaxAgeMs: opts.jwksCacheMaxAgeMs,
        })
      : undefined

  const principalOf = (claims: Record<string, unknown>): Principal => ({
    provider: config.name,
    subject: claims.sub as string,
    claims,
  })

  return {
    name: config.name,
    issuer: config.issuerUrl,
    hasIntrospection: config.introspectionUrl !== undefined,

    async verifyJwt(token) {
      if (!keys)
        return {kind: 'reject', reason: 'no JWKS configured', code: 'no_jwks', keyProblem: true}
      try {
        const {payload} = await jwtVerify(token, keys.getKey, {
          ...(config.issuerUrl !== '' ? {issuer: config.issuerUrl} : {}),
          ...(config.audience !== undefined ? {audience: config.audience} : {}),
          algorithms: ALLOWED_ALGORITHMS,
          requiredClaims: ['exp'],
          currentDate: new Date(opts.now() * 1000),
          clockTolerance: 0,
        })
        // jose has checked signature, iss, aud, exp and nbf; the shared rules add `sub` (contract §2).
        const check = checkClaims(payload as Record<string, unknown>, {
          issuer: config.issuerUrl,
          audience: config.audience,
          now: opts.now(),
          requireIss: true,
        })
        if (!check.ok)
          return {
            kind: 'reject',
            reason: check.reason,
            code: check.code,
            ...(check.expired ? {expired: true} : {}),
          }
        const expiresAt = Math.min(
          (payload.exp as number) * 1000,
          opts.now() * 1000 + opts.jwtCacheTtlMs,
        )
        return {
          kind: 'accept',
          principal: principalOf(payload as Record<string, unknown>),
          expiresAt,
          via: 'jwt',
        }
      } catch (err) {
        return classifyJoseError(err)
      }
    },

    async introspect(token) {
      if (config.introspectionUrl === undefined)
        return {kind: 'reject', reason: 'no introspection endpoint', code: 'opaque_unsupported'}
      const req = introspectionRequest(token, {
        clientId: config.clientId,
        clientSecret,
        bearer: authToken?.get(),
      })
      let res
      try {
        res = await configured.fetchJson(config.introspectionUrl, {
          method: 'POST',
          headers: req.headers,
          body: req.body,
          maxBytes: 256 * 1024,
        })
      } catch (err) {
        return {
          kind: 'unavailable',
          reason: isToolgateError(err) ? err.message : 'introspection request failed',
        }
      }
      const verdict = processIntrospectionResponse(res, {
        issuer: config.issuerUrl,
        audience: config.audience,
        now: opts.now(),
      })
      if (verdict.kind !== 'accept') return verdict
      const exp = verdict.claims.exp as number
      const expiresAt = Math.min(exp * 1000, opts.now() * 1000 + opts.introspectionCacheTtlMs)
      return {
        kind: 'accept',
        principal: principalOf(verdict.claims),
        expiresAt,
        via: 'introspection',
      }
    },

    keySnapshot() {
      return keys?.snapshot()
    },

    async close() {
      await Promise.all(clients.map((c) => c.close()))
    },
  }
}

function classifyJoseError(err: unknown): Verdict {
  if (isToolgateError(err)) return {kind: 'unavailable', reason: err.message}
  if (err instanceof joseErrors.JWTExpired)
    return {kind: 'reject', reason: 'token expired', code: 'expired', expired: true}
  if (err instanceof joseErrors.JWKSTimeout)
    return {kind: 'unavailable', reason: 'JWKS request timed out'}
  if (err instanceof joseErrors.JWKSInvalid)
    return {kind: 'unavailable', reason: 'JWKS response is not a valid key set'}
  if (err instanceof joseErrors.JWKSNoMatchingKey)
    return {
      kind: 'reject',
      reason: 'no key matches the token kid/alg',
      code: 'kid_unknown',
      keyProblem: true,
    }
  if (err instanceof joseErrors.JWTClaimValidationFailed)
    return {
      kind: 'reject',
      reason: `claim check failed: ${err.claim} ${err.reason}`,
      code: claimCode(err.claim, err.reason),
    }
  if (err instanceof joseErrors.JOSEAlgNotAllowed)
    return {
      kind: 'reject',
      reason: 'algorithm not allowed',
      code: 'alg_not_allowed',
      keyProblem: true,
    }
  if (err instanceof joseErrors.JWSSignatureVerificationFailed)
    return {kind: 'reject', reason: 'signature verification failed', code: 'signature_invalid'}
  if (err instanceof joseErrors.JWSInvalid || err instanceof joseErrors.JWTInvalid)
    return {kind: 'reject', reason: 'malformed JWT', code: 'malformed'}
  // ERR_JOSE_GENERIC is what jose throws for a non-200 JWKS answer.
  if (err instanceof joseErrors.JOSEError && err.code === 'ERR_JOSE_GENERIC')
    return {kind: 'unavailable', reason: `JWKS fetch failed: ${err.message}`}
  if (err instanceof joseErrors.JOSEError)
    return {kind: 'reject', reason: err.code, code: 'malformed'}
  if (err instanceof SyntaxError) return {kind: 'unavailable', reason: 'JWKS response is not JSON'}
  return {kind: 'reject', reason: 'token could not be verified', code: 'internal'}
}

/** jose's JWTClaimValidationFailed (claim, reason) as one of our codes. */
function claimCode(claim: string, reason: string): ReasonCode {
  const code = `${claim}_${reason === 'check_failed' ? 'mismatch' : reason}`
  if (code === 'nbf_mismatch') return 'nbf_future'
  const known: ReasonCode[] = [
    'iss_missing',
    'iss_mismatch',
    'aud_missing',
    'aud_mismatch',
    'exp_missing',
    'exp_invalid',
    'nbf_invalid',
    'iat_invalid',
  ]
  return known.includes(code as ReasonCode) ? (code as ReasonCode) : 'claim_invalid'
}

function issuerOnPrivateHost(issuerUrl: string): boolean {
  try {
    const host = new URL(issuerUrl).hostname
    if (host === 'localhost' || host.endsWith('.localhost')) return true
    const range = blockedRange(host)
    return range !== undefined && range !== 'not an IP address'
  } catch {
    return false
  }
}
