import type {ServerResponse} from 'node:http'
import {answer} from './answer.ts'

/**
 * RFC 9728 protected-resource metadata for the proxy (contract §3): served when incoming OIDC is on
 * and `--resource-url` is set, outside authentication, with CORS so browser-based MCP clients can
 * read it.
 */
export const WELL_KNOWN_PREFIX = '/.well-known/oauth-protected-resource'

export interface ResourceMetadata {
  resource: string
  authorization_servers: string[]
  bearer_methods_supported: string[]
  scopes_supported: string[]
}

/**
 * RFC 9728 §3.1: for a resource with a path, the metadata lives at the well-known prefix followed by
 * that path (`https://h/mcp` → `https://h/.well-known/oauth-protected-resource/mcp`).
 */
export function metadataUrl(resourceUrl: string): string {
  const u = new URL(resourceUrl)
  const path = u.pathname === '/' ? '' : u.pathname.replace(/\/+$/, '')
  return `${u.origin}${WELL_KNOWN_PREFIX}${path}`
}

/** The paths this proxy answers for: the bare prefix and the path-suffixed form. */
export function metadataPaths(resourceUrl: string): Set<string> {
  const u = new URL(resourceUrl)
  const path = u.pathname === '/' ? '' : u.pathname.replace(/\/+$/, '')
  return new Set([WELL_KNOWN_PREFIX, WELL_KNOWN_PREFIX + path])
}

export function buildMetadata(opts: {
  resourceUrl: string
  issuer: string | undefined
  scopes: readonly string[]
}): ResourceMetadata {
  return {
    resource: opts.resourceUrl,
    authorization_servers: opts.issuer ? [opts.issuer] : [],
    bearer_methods_supported: ['header'],
    scopes_supported: [...opts.scopes],
  }
}

export const CORS_HEADERS: Record<string, string> = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, OPTIONS',
  'access-control-allow-headers': 'Authorization, Content-Type, MCP-Protocol-Version',
  'access-control-max-age': '86400',
}

export interface WellKnownDocument {
  paths: ReadonlySet<string>
  body: string
}

/** The metadata document of a proxy, or undefined when it serves none (no incoming auth or no --resource-url). */
export function wellKnownDocument(
  resourceUrl: string | undefined,
  issuer: string | undefined,
  scopes: readonly string[] | undefined,
  authOn: boolean,
): WellKnownDocument | undefined {
  if (!authOn || !resourceUrl) return undefined
  return {
    paths: metadataPaths(resourceUrl),
    body: JSON.stringify(buildMetadata({resourceUrl, issuer, scopes: scopes ?? ['openid']})),
  }
}

/** Answers a request for the metadata (GET/HEAD 200, OPTIONS 204 preflight, else 405); false when `path` is not one of its paths. */
export function serveWellKnown(
  doc: WellKnownDocument,
  path: string,
  method: string,
  res: ServerResponse,
): boolean {
  if (!doc.paths.has(path)) return false
  if (method === 'OPTIONS') {
    res.writeHead(204, CORS_HEADERS)
    res.end()
  } else if (method === 'GET' || method === 'HEAD') {
    answer(res, 200, doc.body, CORS_HEADERS)
  } else {
    answer(res, 405, '{"error":"method not allowed"}', {
      ...CORS_HEADERS,
      allow: 'GET, HEAD, OPTIONS',
    })
  }
  return true
}
