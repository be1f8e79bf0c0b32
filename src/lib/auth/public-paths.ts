/**
 * Which request paths skip authentication (contract §1 "Authentication"):
 * `/openapi.json` and `/.well-known/*` always, plus `oauth.publicPaths`. Matching is on the
 * normalised path at segment boundaries (`/docs` matches `/docs` and `/docs/x`, not `/docsx`).
 * A path carrying an encoded `/` or `.` (`%2f`, `%2e`) is never public: such paths are how
 * `/docs/..%2fregistry/...` style tricks reach a protected route through a public prefix.
 */
const ALWAYS_PUBLIC = ['/openapi.json', '/.well-known']

export function isPublicPath(rawPath: string, publicPaths: readonly string[] = []): boolean {
  const pathOnly = rawPath.split('?', 1)[0] ?? ''
  if (/%2f|%2e|%5c/i.test(pathOnly)) return false
  const normalised = normalisePath(pathOnly)
  if (normalised === undefined) return false
  for (const prefix of [...ALWAYS_PUBLIC, ...publicPaths]) {
    const p = prefix.replace(/\/+$/, '')
    // A prefix of `/` (empty once trimmed) would make every route public: never match it, so a
    // config that slipped past validation still fails closed.
    if (p === '') continue
    if (normalised === p || normalised.startsWith(p + '/')) return true
  }
  return false
}

/** Resolves `.`/`..` segments and duplicate slashes; undefined when `..` climbs above the root. */
export function normalisePath(path: string): string | undefined {
  const out: string[] = []
  for (const seg of path.split('/')) {
    if (seg === '' || seg === '.') continue
    if (seg === '..') {
      if (out.length === 0) return undefined
      out.pop()
      continue
    }
    out.push(seg)
  }
  return '/' + out.join('/')
}
