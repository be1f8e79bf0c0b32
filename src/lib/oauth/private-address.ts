import {lookup} from 'node:dns/promises'
import {BlockList, isIP} from 'node:net'

/**
 * Address classes that a URL learned from a remote document must not lead to (contract §2):
 * private, loopback, link-local, unique-local, plus the unspecified, CGNAT and IPv4-mapped forms
 * that reach the same hosts by another spelling.
 */
const blocked = new BlockList()
blocked.addSubnet('0.0.0.0', 8, 'ipv4')
blocked.addSubnet('10.0.0.0', 8, 'ipv4')
blocked.addSubnet('100.64.0.0', 10, 'ipv4') // RFC 6598 shared address space
blocked.addSubnet('127.0.0.0', 8, 'ipv4')
blocked.addSubnet('169.254.0.0', 16, 'ipv4')
blocked.addSubnet('172.16.0.0', 12, 'ipv4')
blocked.addSubnet('192.168.0.0', 16, 'ipv4')
blocked.addAddress('::', 'ipv6')
blocked.addAddress('::1', 'ipv6')
blocked.addSubnet('fc00::', 7, 'ipv6')
blocked.addSubnet('fe80::', 10, 'ipv6')

/** True when an IP literal is private, loopback, link-local or unique-local. */
export function isPrivateAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '')
  const family = isIP(bare)
  if (family === 4) return blocked.check(bare, 'ipv4')
  if (family === 6) {
    // ::ffff:10.0.0.1 reaches 10.0.0.1; judge the embedded IPv4 address.
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare)
    if (mapped) return blocked.check(mapped[1] as string, 'ipv4')
    return blocked.check(bare, 'ipv6')
  }
  return false
}

const LOOPBACK_NAMES = new Set(['localhost', 'localhost.'])

/** Loopback by spelling (no DNS): used for the "https unless loopback" rule on typed URLs. */
export function isLoopbackHost(hostname: string): boolean {
  const bare = hostname.replace(/^\[|\]$/g, '').toLowerCase()
  if (LOOPBACK_NAMES.has(bare) || bare.endsWith('.localhost')) return true
  if (isIP(bare) === 4) return bare.startsWith('127.')
  return bare === '::1'
}

/**
 * Whether an operator-typed URL points at a private destination. URLs learned from documents that
 * this URL led to may then be private too (contract §2); otherwise they must be public.
 */
export async function isPrivateDestination(url: URL): Promise<boolean> {
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (isIP(host)) return isPrivateAddress(host)
  if (LOOPBACK_NAMES.has(host.toLowerCase()) || host.toLowerCase().endsWith('.localhost')) return true
  try {
    const addresses = await lookup(host, {all: true})
    return addresses.some((a) => isPrivateAddress(a.address))
  } catch {
    // Unresolvable now: treat as public, the stricter choice for what it leads to.
    return false
  }
}
