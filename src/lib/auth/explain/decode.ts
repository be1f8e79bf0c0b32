import {decodeJwt, decodeProtectedHeader} from 'jose'
import {jwsShape} from '../authenticator.ts'

/**
 * What `auth explain` shows of a token: the JWS header and the claims, never the signature (the
 * part that makes a copied token usable on its own is the whole token; without the signature the
 * header and claims are only facts about it). Opaque tokens show only their length.
 */
export interface DecodedToken {
  format: 'jwt' | 'opaque'
  length: number
  header: {alg: unknown; kid: unknown; typ: unknown} | undefined
  /** Registered claims as found (unverified). */
  claims:
    {iss: unknown; sub: unknown; aud: unknown; exp: unknown; nbf: unknown; iat: unknown} | undefined
  /** Names of the other claims (values left out: they may be personal data). */
  otherClaims: string[] | undefined
  /** Why a token shaped like a JWT (three dot-separated parts) is treated as opaque. */
  notJwt: string | undefined
}

const REGISTERED = ['iss', 'sub', 'aud', 'exp', 'nbf', 'iat'] as const

export function decodeToken(token: string): DecodedToken {
  // The validator's own format detection decides JWT or opaque (authenticator.ts), so the two
  // can never disagree about which path a token takes.
  const shape = jwsShape(token)
  if (!shape) {
    const parts = token.split('.')
    return {
      format: 'opaque',
      length: token.length,
      header: undefined,
      claims: undefined,
      otherClaims: undefined,
      notJwt: undefined,
      ...(parts.length === 3
        ? {notJwt: 'three parts, but the header or payload does not decode'}
        : {}),
    }
  }
  const header = decodeProtectedHeader(token)
  const payload = decodeJwt(token) as Record<string, unknown>
  return {
    format: 'jwt',
    length: token.length,
    header: {alg: header.alg, kid: header.kid, typ: header.typ},
    claims: {
      iss: payload.iss,
      sub: payload.sub,
      aud: payload.aud,
      exp: payload.exp,
      nbf: payload.nbf,
      iat: payload.iat,
    },
    otherClaims: Object.keys(payload).filter((k) => !(REGISTERED as readonly string[]).includes(k)),
    notJwt: undefined,
  }
}

/** "3 h 2 min", "45 s", "2 d 4 h": the difference between two instants in human units. */
export function humanDuration(seconds: number): string {
  let s = Math.round(Math.abs(seconds))
  if (s < 60) return `${s} s`
  const units: Array<[string, number]> = [
    ['d', 86_400],
    ['h', 3_600],
    ['min', 60],
    ['s', 1],
  ]
  const out: string[] = []
  for (const [name, size] of units) {
    if (s >= size) {
      out.push(`${Math.floor(s / size)} ${name}`)
      s %= size
    }
    if (out.length === 2) break
  }
  return out.join(' ')
}

/** `relative(exp, now)`: "in 5 min" or "3 h ago". */
export function relative(at: number, now: number): string {
  if (at === now) return 'now'
  return at > now ? `in ${humanDuration(at - now)}` : `${humanDuration(now - at)} ago`
}

/**
 * Why two issuer strings differ, when the difference is a common slip: the validator compares
 * byte for byte (contract §1), so `https://a/` and `https://a` are different issuers.
 */
export function issuerHint(expected: string, found: string): string | undefined {
  const strip = (s: string) => s.replace(/\/+$/, '')
  if (strip(expected) === strip(found))
    return expected.endsWith('/')
      ? 'trailing slash: the provider issuerUrl ends with "/", the token iss does not'
      : 'trailing slash: the token iss ends with "/", the provider issuerUrl does not'
  const scheme = (s: string) => s.replace(/^[a-z]+:\/\//i, '')
  if (strip(scheme(expected)) === strip(scheme(found))) return 'scheme differs (http vs https)'
  if (expected.toLowerCase() === found.toLowerCase()) return 'letter case differs'
  if (expected.trim() === found.trim()) return 'leading or trailing white space'
  try {
    const e = new URL(expected)
    const f = new URL(found)
    if (e.host !== f.host && e.pathname === f.pathname)
      return `host differs (${e.host} vs ${f.host})`
    if (e.host === f.host) return `path differs ("${e.pathname}" vs "${f.pathname}")`
  } catch {
    // not URLs: no hint beyond the byte comparison
  }
  return undefined
}
