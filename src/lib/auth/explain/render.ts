import type {Explanation} from './explain.ts'

const MARK = {pass: 'ok  ', fail: 'FAIL', skip: 'skip', info: 'info'} as const

/** The human form of an explanation (the command prints it; `--json` prints the object itself). */
export function renderExplanation(x: Explanation): string {
  const out: string[] = []
  if (x.verdict === 'accepted') {
    const a = x.acceptedBy
    out.push(
      `ACCEPTED by provider "${a?.provider}" (sub ${JSON.stringify(a?.subject)}, via ${a?.via})`,
    )
  } else if (x.verdict === 'refused') {
    out.push(`REFUSED: ${x.code} (check ${x.check}): ${x.reason}`)
    out.push(`  the server answers 401 with error_description "${x.errorDescription}"`)
  } else {
    out.push(`UNVERIFIED: ${x.reason}`)
  }
  const t = x.token
  out.push('')
  if (t.format === 'jwt') {
    out.push(`token: JWT, ${t.length} characters (signature not shown)`)
    const show = (v: unknown) => (v === undefined ? '(absent)' : JSON.stringify(v))
    out.push(
      `  header: alg ${show(t.header?.alg)}, kid ${show(t.header?.kid)}, typ ${show(t.header?.typ)}`,
    )
    const c = t.claims
    if (c) {
      const parts = Object.entries(c)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => `${k} ${JSON.stringify(v)}`)
      out.push(`  claims: ${parts.join(', ') || '(none of iss, sub, aud, exp, nbf, iat)'}`)
    }
    if (t.otherClaims?.length) out.push(`  other claims: ${t.otherClaims.join(', ')}`)
  } else {
    out.push(`token: opaque, ${t.length} characters${t.notJwt ? ` (${t.notJwt})` : ''}`)
  }
  for (const p of x.providers) {
    out.push('')
    const aud = p.audience === null ? 'any audience' : `audience ${JSON.stringify(p.audience)}`
    out.push(`provider "${p.name}" (issuer ${JSON.stringify(p.issuer)}, ${aud})`)
    out.push(`  ${p.selection}${p.hint ? ` (hint: ${p.hint})` : ''}`)
    const width = Math.max(0, ...p.checks.map((c) => c.id.length))
    for (const c of p.checks) out.push(`  [${MARK[c.status]}] ${c.id.padEnd(width)}  ${c.detail}`)
  }
  if (x.providers.length === 0) out.push('', 'no providers configured')
  if (x.skipped.length) {
    out.push('', 'skipped because of --offline:')
    for (const s of x.skipped) out.push(`  ${s}`)
  }
  out.push('', `checked at ${x.now}`)
  return out.join('\n')
}

/**
 * The `--json` form: the explanation with every absent value as `null`, so each key is always
 * there and scripts can rely on the shape (docs/troubleshooting.md).
 */
export function explanationJson(x: Explanation): unknown {
  const providers = x.providers.map((p) => ({
    hint: undefined,
    result: undefined,
    ...p,
    checks: p.checks.map((c) => ({
      id: c.id,
      status: c.status,
      detail: c.detail,
      code: c.code,
      expected: c.expected,
      found: c.found,
    })),
  }))
  return JSON.parse(
    JSON.stringify({...x, providers}, (_k, v: unknown) => (v === undefined ? null : v)),
  )
}
