import {BlockList, isIP} from 'node:net'

/**
 * `NO_PROXY` as curl reads it: entries separated by commas or spaces; `*` alone means every host;
 * a name matches itself and every name under it (`example.com` and `.example.com` both match
 * `example.com` and `www.example.com`, never `notexample.com`); an IP address matches itself; a
 * CIDR block (`10.0.0.0/8`, `fd00::/8`) matches the addresses in it; `host:port` (or
 * `[v6]:port`) matches that port only. Case and a trailing dot do not matter.
 */
export type NoProxyMatch = (hostname: string, port: number) => boolean

interface Entry {
  name?: string
  ip?: string
  block?: BlockList
  port?: number
}

export function parseNoProxy(text: string | undefined): NoProxyMatch {
  const raw = (text ?? '').split(/[\s,]+/).filter(Boolean)
  if (raw.includes('*')) return () => true
  const entries = raw.flatMap((e) => {
    const parsed = parseEntry(e)
    return parsed ? [parsed] : []
  })
  if (entries.length === 0) return () => false
  return (hostname, port) => {
    const host = normalize(hostname)
    const family = isIP(host)
    return entries.some((e) => {
      if (e.port !== undefined && e.port !== port) return false
      if (e.block) return family !== 0 && e.block.check(host, family === 6 ? 'ipv6' : 'ipv4')
      if (e.ip) return family !== 0 && e.ip === host
      return family === 0 && (host === e.name || host.endsWith('.' + e.name))
    })
  }
}

function parseEntry(entry: string): Entry | undefined {
  let text = entry.trim().toLowerCase()
  let port: number | undefined
  // [v6]:port, [v6], host:port — a bare v6 address has several colons and no port.
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(text)
  if (bracket) {
    text = bracket[1]!
    if (bracket[2]) port = Number(bracket[2])
  } else if ((text.match(/:/g) ?? []).length === 1) {
    const [host, p] = text.split(':')
    if (!/^\d+$/.test(p!)) return undefined
    text = host!
    port = Number(p)
  }
  const cidr = /^(.+)\/(\d{1,3})$/.exec(text)
  if (cidr && isIP(cidr[1]!)) {
    const block = new BlockList()
    const family = isIP(cidr[1]!) === 6 ? 'ipv6' : 'ipv4'
    const bits = Number(cidr[2])
    if (bits > (family === 'ipv6' ? 128 : 32)) return undefined
    block.addSubnet(cidr[1]!, bits, family)
    return {block, ...(port !== undefined ? {port} : {})}
  }
  if (isIP(text)) return {ip: canonicalIp(text), ...(port !== undefined ? {port} : {})}
  const name = normalize(text.replace(/^\*?\./, ''))
  return name ? {name, ...(port !== undefined ? {port} : {})} : undefined
}

/** An address as URL parsing writes it (`FE80::0001` → `fe80::1`), as target hosts come. */
function canonicalIp(ip: string): string {
  return normalize(new URL(`http://${isIP(ip) === 6 ? `[${ip}]` : ip}/`).hostname)
}

function normalize(host: string): string {
  const h = host.toLowerCase().replace(/\.$/, '')
  return h.startsWith('[') && h.endsWith(']') ? h.slice(1, -1) : h
}

/** Loopback names and addresses, always reached directly (toolgate's own workloads live there). */
export function isLoopbackHost(hostname: string): boolean {
  const host = normalize(hostname)
  if (host === 'localhost' || host.endsWith('.localhost')) return true
  if (isIP(host) === 4) return host.startsWith('127.') || host === '0.0.0.0'
  // ::1, ::, and 127.0.0.0/8 mapped into IPv6 (URLs write ::ffff:7f00:1).
  if (isIP(host) === 6) {
    const c = canonicalIp(host)
    return c === '::1' || c === '::' || /^::ffff:7f[0-9a-f]{2}:/.test(c) || /^::ffff:127\./.test(c)
  }
  return false
}
