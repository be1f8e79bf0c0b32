/**
 * `toolgate auth explain`: why a token is accepted or refused, provider by provider.
 *
 * The verdict is never computed here: online, the token goes through the very validator `serve`
 * and `proxy` build (createAuthenticator with the same provider config), and its trace says which
 * providers were tried and what each answered; the offline checks (checks.ts) only add detail —
 * expected vs found, times in human units, issuer hints. If a check computed here passed while the
 * validator refused on it, the validator wins and the check is shown failed.
 */
import type {LookupFunction} from 'node:net'
import type {Logger} from '../../log/logger.ts'
import {createAuthenticator} from '../index.ts'
import type {TraceEvent} from '../authenticator.ts'
import {HEADER_DESCRIPTIONS, parseAuthorization} from '../bearer-header.ts'
import type {KeySnapshot} from '../key-source.ts'
import type {Verdict} from '../provider-validator.ts'
import {REASONS, checkOf, type ReasonCode} from '../reasons.ts'
import type {OAuthConfig, ProviderConfig} from '../types.ts'
import {firstFailure, offlineChecks, type Check} from './checks.ts'
import {decodeToken, issuerHint, relative, type DecodedToken} from './decode.ts'

export type ExplainVerdict = 'accepted' | 'refused' | 'unverified'

export interface ProviderReport {
  name: string
  issuer: string
  audience: string | null
  selected: boolean
  /** Why the token's iss selects (or skips) this provider. */
  selection: string
  hint?: string
  checks: Check[]
  /** What the real validator answered (online only). */
  result?: {kind: Verdict['kind']; code: ReasonCode | null; step: 'jwt' | 'introspection'}
}

export interface Explanation {
  verdict: ExplainVerdict
  code: ReasonCode | null
  /** The check that refused (`checks[].id`), null when accepted or unverified. */
  check: string | null
  reason: string
  /** What the server sends: the 401 error_description ("" when accepted). */
  errorDescription: string
  acceptedBy: {provider: string; subject: string; via: 'jwt' | 'introspection'} | null
  token: DecodedToken
  providers: ProviderReport[]
  offline: boolean
  /** Checks not made because of --offline. */
  skipped: string[]
  now: string
}

export interface ExplainOptions {
  oauth: OAuthConfig
  /** Where the providers come from, for error messages (`--oidc-* flags`, `auth.oauth.providers`). */
  configPath: string
  offline: boolean
  logger: Logger
  /** Milliseconds since the epoch. */
  now?: () => number
  timeoutMs?: number
  lookup?: LookupFunction
}

const MAX_TOKEN_LENGTH = 16 * 1024

export async function explainToken(token: string, opts: ExplainOptions): Promise<Explanation> {
  const nowMs = (opts.now ?? Date.now)()
  const now = Math.floor(nowMs / 1000)
  const decoded = decodeToken(token)
  const providers = opts.oauth.providers.map((p) => select(p, decoded))
  for (const r of providers) {
    const p = opts.oauth.providers.find((x) => x.name === r.name) as ProviderConfig
    if (r.selected && decoded.format === 'jwt') r.checks = offlineChecks(p, decoded, now)
  }
  const base = {
    token: decoded,
    providers,
    offline: opts.offline,
    now: new Date(nowMs).toISOString(),
  }
  return opts.offline
    ? offlineVerdict(token, base, opts.oauth.providers)
    : await onlineVerdict(token, base, opts, nowMs)
}

type Base = Pick<Explanation, 'token' | 'providers' | 'offline' | 'now'>

function select(p: ProviderConfig, t: DecodedToken): ProviderReport {
  const report: ProviderReport = {
    name: p.name,
    issuer: p.issuerUrl,
    audience: p.audience ?? null,
    selected: false,
    selection: '',
    checks: [],
  }
  if (t.format === 'opaque') {
    report.selected = p.introspectionUrl !== undefined
    report.selection = report.selected
      ? 'opaque token: introspected at this provider'
      : 'opaque token: skipped, this provider has no introspectionUrl'
    return report
  }
  const iss = t.claims?.iss
  if (p.issuerUrl === '') {
    report.selected = true
    report.selection = 'no issuer configured: every JWT is verified with its keys'
  } else if (iss === p.issuerUrl) {
    report.selected = true
    report.selection = `token iss equals issuerUrl ${JSON.stringify(p.issuerUrl)} byte for byte`
  } else {
    report.selection =
      typeof iss === 'string'
        ? `skipped: token iss ${JSON.stringify(iss)} ≠ issuerUrl ${JSON.stringify(p.issuerUrl)}`
        : `skipped: the token has no string iss, so no issuer selects it`
    const hint = typeof iss === 'string' ? issuerHint(p.issuerUrl, iss) : undefined
    if (hint) report.hint = hint
  }
  return report
}

function refusedWith(code: ReasonCode, base: Base, skipped: string[] = []): Explanation {
  const generic =
    code === 'expired'
      ? 'token expired'
      : code === 'token_too_large'
        ? 'token too large'
        : code === 'provider_unavailable'
          ? 'token could not be validated'
          : 'invalid token'
  return {
    verdict: 'refused',
    code,
    check: checkOf(code),
    reason: REASONS[code].text,
    errorDescription:
      code === 'header_missing'
        ? HEADER_DESCRIPTIONS.missing
        : code === 'header_malformed'
          ? HEADER_DESCRIPTIONS.malformed
          : code === 'header_multiple'
            ? HEADER_DESCRIPTIONS.multiple
            : `${generic} (reason: ${code})`,
    acceptedBy: null,
    ...base,
    skipped,
  }
}

/** Structural refusals both modes share: the same header parser and size limit as the server. */
function structural(token: string): ReasonCode | undefined {
  const header = parseAuthorization(`Bearer ${token}`)
  if (!header.ok) return header.reason
  if (token.length > MAX_TOKEN_LENGTH) return 'token_too_large'
  return undefined
}

function offlineVerdict(token: string, base: Base, configs: ProviderConfig[]): Explanation {
  const early = structural(token)
  if (early) return refusedWith(early, base)
  const selected = base.providers.filter((r) => r.selected)
  if (selected.length === 0)
    return refusedWith(base.token.format === 'jwt' ? 'iss_unknown' : 'opaque_unsupported', base)
  const skipped: string[] = []
  let definitive: Check | undefined
  let allRefuse = true
  for (const r of selected) {
    const p = configs.find((x) => x.name === r.name) as ProviderConfig
    if (base.token.format === 'jwt') {
      for (const id of ['jwks', 'signature'] as const) {
        r.checks.push({id, status: 'skip', detail: 'skipped (--offline)'})
        skipped.push(`${r.name}: ${id === 'jwks' ? 'kid lookup in the JWKS' : 'signature'}`)
      }
    }
    if (p.introspectionUrl !== undefined) {
      r.checks.push({id: 'introspection', status: 'skip', detail: 'skipped (--offline)'})
      skipped.push(`${r.name}: introspection`)
    }
    const fail = firstFailure(r.checks)
    // A key problem (alg) sends the token to introspection when the provider has it.
    const refuses = fail !== undefined && !(fail.code === 'alg_not_allowed' && p.introspectionUrl)
    if (refuses) definitive ??= fail
    else allRefuse = false
  }
  if (allRefuse && definitive?.code) return refusedWith(definitive.code, base, skipped)
  return {
    verdict: 'unverified',
    code: null,
    check: null,
    reason: 'no offline check refuses the token; the network checks were skipped',
    errorDescription: '',
    acceptedBy: null,
    ...base,
    skipped,
  }
}

async function onlineVerdict(
  token: string,
  base: Base,
  opts: ExplainOptions,
  nowMs: number,
): Promise<Explanation> {
  const events: TraceEvent[] = []
  const auth = createAuthenticator(opts.oauth, {
    logger: opts.logger,
    configPath: opts.configPath,
    cacheMaxEntries: 0,
    now: () => nowMs,
    trace: (e) => events.push(e),
    ...(opts.timeoutMs !== undefined ? {timeoutMs: opts.timeoutMs} : {}),
    ...(opts.lookup ? {lookup: opts.lookup} : {}),
  })
  let outcome
  try {
    outcome = await auth.authenticate(`Bearer ${token}`)
  } finally {
    await auth.close()
  }
  for (const e of events) {
    if (e.kind !== 'verdict') continue
    const r = base.providers.find((x) => x.name === e.provider)
    if (r) merge(r, e, base.token, Math.floor(nowMs / 1000))
  }
  if (outcome.ok) {
    const via = [...events]
      .reverse()
      .find((e) => e.kind === 'verdict' && e.verdict.kind === 'accept')
    return {
      verdict: 'accepted',
      code: null,
      check: null,
      reason: 'accepted',
      errorDescription: '',
      acceptedBy: {
        provider: outcome.principal.provider,
        subject: outcome.principal.subject,
        via: via?.kind === 'verdict' ? via.step : 'jwt',
      },
      ...base,
      skipped: [],
    }
  }
  const code = outcome.reason ?? 'internal'
  const refused = refusedWith(code, base)
  // A refusal that came from an introspection answer is that answer's check.
  const decider = base.providers.find((p) => p.result?.code === code)
  if (decider?.result?.step === 'introspection') refused.check = 'introspection'
  return {
    ...refused,
    errorDescription:
      outcome.error === 'invalid_token'
        ? `${outcome.description} (reason: ${code})`
        : outcome.description,
  }
}

/** Adds what the real validator said to a provider's report (keys, signature, introspection). */
function merge(
  r: ProviderReport,
  e: Extract<TraceEvent, {kind: 'verdict'}>,
  t: DecodedToken,
  now: number,
): void {
  const v = e.verdict
  const code =
    v.kind === 'reject' ? v.code : v.kind === 'unavailable' ? 'provider_unavailable' : null
  r.result = {kind: v.kind, code, step: e.step}
  if (e.step === 'jwt') {
    r.checks.push(jwksCheck(e.keys, t, v))
    r.checks.push(signatureCheck(v))
    // The validator is the judge: a check it refused on is shown failed, with its reason.
    if (v.kind === 'reject') {
      const id = checkOf(v.code)
      const c = r.checks.find((x) => x.id === id)
      if (c && c.status !== 'fail')
        Object.assign(c, {
          status: 'fail',
          code: v.code,
          detail: `${c.detail} — refused: ${v.reason}`,
        })
      else if (!c) r.checks.push({id, status: 'fail', code: v.code, detail: v.reason})
    }
    return
  }
  const answer =
    v.kind === 'accept' ? v.principal.claims : v.kind === 'reject' ? v.answer : undefined
  const facts = answer
    ? `active ${JSON.stringify(answer.active)}, aud ${JSON.stringify(answer.aud)}, exp ${typeof answer.exp === 'number' ? `${JSON.stringify(answer.exp)} (${relative(answer.exp, now)})` : JSON.stringify(answer.exp)}`
    : ''
  r.checks.push({
    id: 'introspection',
    status: v.kind === 'accept' ? 'pass' : 'fail',
    ...(code ? {code} : {}),
    detail:
      v.kind === 'accept'
        ? `introspection: ${facts}`
        : `${v.reason}${facts ? ` — answer: ${facts}` : ''}`,
    ...(answer ? {found: answer} : {}),
  })
}

function jwksCheck(keys: KeySnapshot | undefined, t: DecodedToken, v: Verdict): Check {
  if (v.kind === 'unavailable')
    return {
      id: 'jwks',
      status: 'fail',
      code: 'provider_unavailable',
      detail: `keys unavailable: ${v.reason}`,
    }
  if (!keys)
    return {id: 'jwks', status: 'fail', code: 'no_jwks', detail: 'the provider has no JWKS'}
  const when = keys.fetchedAt ? `fetched ${new Date(keys.fetchedAt).toISOString()}` : 'not fetched'
  const where = `${keys.keys.length} key(s) at ${keys.jwksUrl ?? '(not discovered)'}, ${when}`
  const kid = t.header?.kid
  const kids = keys.keys.map((k) => k.kid)
  const found = kid === undefined ? keys.keys.length > 0 : kids.includes(kid as string)
  if (v.kind === 'reject' && v.code === 'kid_unknown')
    return {
      id: 'jwks',
      status: 'fail',
      code: 'kid_unknown',
      detail: `no key matches kid ${JSON.stringify(kid)} (JWKS has ${JSON.stringify(kids)}; ${where})`,
      expected: kids,
      found: kid,
    }
  return {
    id: 'jwks',
    status: found ? 'pass' : 'info',
    detail:
      kid === undefined
        ? `no kid in the header; ${where}`
        : `kid ${JSON.stringify(kid)} ${found ? 'is' : 'is not'} in the JWKS (${where})`,
    found: kid,
  }
}

function signatureCheck(v: Verdict): Check {
  if (v.kind === 'accept') return {id: 'signature', status: 'pass', detail: 'signature verifies'}
  if (v.kind === 'unavailable')
    return {id: 'signature', status: 'skip', detail: 'not checked: the keys could not be fetched'}
  if (v.code === 'signature_invalid')
    return {
      id: 'signature',
      status: 'fail',
      code: 'signature_invalid',
      detail: 'the signature does not verify with the key the kid names',
    }
  // jose verifies the signature before any claim, so a claim refusal means the signature held.
  if (['iss', 'aud', 'exp', 'nbf', 'iat', 'sub', 'claims'].includes(checkOf(v.code)))
    return {id: 'signature', status: 'pass', detail: 'signature verifies'}
  return {id: 'signature', status: 'skip', detail: `not checked: ${v.reason}`}
}
