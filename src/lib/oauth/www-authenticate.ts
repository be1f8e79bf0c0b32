/**
 * A parser for `WWW-Authenticate` (RFC 9110 §11.6.1): one or more challenges, each a scheme with
 * auth-params (`name=token` or `name="quoted \" string"`) or a token68. Only what the remote login
 * needs: the Bearer challenge's `resource_metadata` (RFC 9728 §5.1), `realm`, `scope`.
 */
export interface Challenge {
  scheme: string
  params: Record<string, string>
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+/

export function parseWwwAuthenticate(header: string | null | undefined): Challenge[] {
  if (!header) return []
  const challenges: Challenge[] = []
  let rest = header.trim()
  let current: Challenge | undefined
  while (rest.length > 0) {
    rest = rest.replace(/^[\s,]+/, '')
    const name = TOKEN.exec(rest)?.[0]
    if (!name) break
    const after = rest.slice(name.length)
    const param = /^\s*=\s*/.exec(after)
    if (current && param) {
      rest = after.slice(param[0].length)
      let value: string
      if (rest.startsWith('"')) {
        let i = 1
        value = ''
        while (i < rest.length && rest[i] !== '"') {
          if (rest[i] === '\\' && i + 1 < rest.length) i++
          value += rest[i]
          i++
        }
        rest = rest.slice(i + 1)
      } else {
        value = /^[^\s,]*/.exec(rest)?.[0] ?? ''
        rest = rest.slice(value.length)
      }
      const key = name.toLowerCase()
      // A repeated parameter is ambiguous; keep the first (deny the attacker a second say).
      if (!(key in current.params)) current.params[key] = value
      continue
    }
    // A new challenge: scheme, then maybe a token68 (ignored) or params.
    current = {scheme: name.toLowerCase(), params: {}}
    challenges.push(current)
    rest = after
    const token68 = /^\s+[A-Za-z0-9._~+/-]+=*\s*(,|$)/.exec(rest)
    if (token68 && !/=\s*[^=,\s]/.test(token68[0])) rest = rest.slice(token68[0].length)
  }
  return challenges
}

export function bearerChallenge(header: string | null | undefined): Challenge | undefined {
  return parseWwwAuthenticate(header).find((c) => c.scheme === 'bearer')
}
