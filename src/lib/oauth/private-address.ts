import {lookup} from 'node:dns/promises'
import {isIP} from 'node:net'
import {isBlockedAddress} from '../http/ip-ranges.ts'

const LOOPBACK_NAMES = new Set(['localhost', 'localhost.'])

function bare(hostname: string): string {
  return hostname.replace(/^\[|\]$/g, '').toLowerCase()
}

/** Loopback by spelling (no DNS): the "https unless loopback" rule for typed and learned endpoints. */
export function isLoopbackHost(hostname: string): boolean {
  const host = bare(hostname)
  if (LOOPBACK_NAMES.has(host) || host.endsWith('.localhost')) return true
  if (isIP(host) === 4) return host.startsWith('127.')
  return host === '::1'
}

/**
 * Whether an operator-typed URL points at a private destination. URLs learned from documents this
 * URL led to may then be private too (contract §2); otherwise they must be public.
 */
export async function isPrivateDestination(url: URL): Promise<boolean> {
  const host = bare(url.hostname)
  if (isIP(host)) return isBlockedAddress(host)
  if (isLoopbackHost(host)) return true
  try {
    const addresses = await lookup(host, {all: true})
    return addresses.some((a) => isBlockedAddress(a.address))
  } catch {
    // Unresolvable now: treat as public, the stricter choice for what it leads to.
    return false
  }
}
