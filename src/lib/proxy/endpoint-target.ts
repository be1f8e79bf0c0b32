/**
 * `--target-uri` naming the MCP endpoint itself (issue 31): users paste the URL a server or `run`
 * printed, `http://127.0.0.1:3001/mcp`, and a proxy that joined it with the client's `/mcp`
 * (`/mcp/mcp`) answered every request 404. A target whose last path segment is an MCP endpoint —
 * `mcp` (streamable HTTP) or `sse` (legacy SSE) — is taken as that endpoint: the base path is what
 * comes before it, so the client's `/mcp` (or `/sse` and the legacy POST path) reaches it.
 */
const ENDPOINTS = new Set(['mcp', 'sse'])

export interface TargetPaths {
  /** The path prefix joined with each client path (no trailing slash). */
  prefix: string
  /** The endpoint the target URI named (`/mcp`, `/sse`), if it named one. */
  endpoint: string | undefined
}

export function targetPaths(target: URL): TargetPaths {
  const path = target.pathname.replace(/\/+$/, '')
  const cut = path.lastIndexOf('/')
  const last = path.slice(cut + 1)
  if (ENDPOINTS.has(last)) return {prefix: path.slice(0, cut), endpoint: `/${last}`}
  return {prefix: path, endpoint: undefined}
}

/** The URL clients use on a proxy listening at `base` (no path) in front of `target`. */
export function clientUrl(base: string, target: URL): string {
  const {endpoint} = targetPaths(target)
  return base + (endpoint ?? '/mcp')
}
