import type {IncomingHttpHeaders, OutgoingHttpHeaders} from 'node:http'

/**
 * Hop-by-hop fields (RFC 9110 §7.6.1): meaningful for one connection only, so a proxy must not
 * forward them. `Proxy-Connection` is the non-standard alias old clients still send;
 * `Proxy-Authorization` is addressed to this proxy, never to the target (RFC 9110 §11.7.2).
 */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
])

/** Names listed in `Connection` (RFC 9110 §7.6.1: "…and any field named in Connection"). */
function connectionListed(value: string | string[] | undefined): Set<string> | undefined {
  if (value === undefined) return undefined
  const text = Array.isArray(value) ? value.join(',') : value
  const names = new Set<string>()
  for (const part of text.split(',')) {
    const n = part.trim().toLowerCase()
    if (n) names.add(n)
  }
  return names.size ? names : undefined
}

export function isHopByHop(name: string): boolean {
  return HOP_BY_HOP.has(name.toLowerCase())
}

/**
 * Fields that state who the client is or how it reached us (RFC 7239 `Forwarded`, the de-facto
 * `X-Forwarded-*` family and `X-Real-IP`). Only a proxy may write them; a client-sent value would
 * let anyone claim another address, host or scheme to a target that trusts them, so the proxy
 * neither forwards them from the client nor lets an operator inject them. `name` is lower-case.
 */
export function isProxyIdentityField(name: string): boolean {
  return name === 'forwarded' || name === 'x-real-ip' || name.startsWith('x-forwarded-')
}

/**
 * Copies end-to-end fields. `drop` names extra (lower-case) fields to leave out, e.g. `host`
 * toward the target (the HTTP client sets it from the target origin) or `authorization` when the proxy
 * supplies its own credential.
 */
export function endToEndHeaders(
  headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>,
  drop?: ReadonlySet<string>,
): OutgoingHttpHeaders & Record<string, string | string[]> {
  const listed = connectionListed(headers['connection'])
  const out: Record<string, string | string[]> = {}
  for (const name in headers) {
    const value = headers[name]
    if (value === undefined) continue
    const lower = name.toLowerCase()
    if (HOP_BY_HOP.has(lower) || listed?.has(lower) || drop?.has(lower)) continue
    out[lower] = value
  }
  return out
}

/** The client's request fields as the target gets them: end-to-end, minus proxy-identity fields. */
export function requestHeadersForTarget(
  headers: IncomingHttpHeaders,
  drop: ReadonlySet<string>,
): OutgoingHttpHeaders & Record<string, string | string[]> {
  const out = endToEndHeaders(headers, drop)
  for (const name in out) if (isProxyIdentityField(name)) delete out[name]
  return out
}

/**
 * The same filter over a response head as it arrives (raw name/value buffers from undici, strings
 * from node:http), producing the flat `[name, value, …]` list `writeHead` takes: names
 * lower-cased, repeated fields kept as separate lines in wire order, no intermediate object.
 */
export function endToEndRawHeaders(raw: readonly (Buffer | string)[]): string[] {
  const names: string[] = []
  let listed: Set<string> | undefined
  for (let i = 0; i < raw.length; i += 2) {
    const name = latin1(raw[i]!).toLowerCase()
    names.push(name)
    if (name === 'connection') {
      const more = connectionListed(latin1(raw[i + 1]!))
      if (more) listed = listed ? new Set([...listed, ...more]) : more
    }
  }
  const out: string[] = []
  for (let k = 0; k < names.length; k++) {
    const name = names[k] as string
    if (HOP_BY_HOP.has(name) || listed?.has(name)) continue
    out.push(name, latin1(raw[2 * k + 1]!))
  }
  return out
}

/** Field bytes as one char per byte (RFC 9110 §5.5: obs-text is opaque, never decoded as UTF-8). */
function latin1(raw: Buffer | string): string {
  return typeof raw === 'string' ? raw : raw.toString('latin1')
}

/** Every value of `name` (lower-case) in a flat header list, in order. */
export function flatHeaderValues(flat: readonly string[], name: string): string[] {
  const out: string[] = []
  for (let i = 0; i < flat.length; i += 2) if (flat[i] === name) out.push(flat[i + 1] as string)
  return out
}

/** A flat header list without the fields called `name` (lower-case). */
export function withoutFlatHeader(flat: readonly string[], name: string): string[] {
  const out: string[] = []
  for (let i = 0; i < flat.length; i += 2)
    if (flat[i] !== name) out.push(flat[i] as string, flat[i + 1] as string)
  return out
}

/** A flat header list as a record (names are already lower-case; repeated fields become arrays). */
export function flatHeaderRecord(flat: readonly string[]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {}
  for (let i = 0; i < flat.length; i += 2) {
    const name = flat[i] as string
    const value = flat[i + 1] as string
    const prev = out[name]
    out[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value]
  }
  return out
}
