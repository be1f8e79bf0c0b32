import {lookup} from 'node:dns/promises'
import {isIP} from 'node:net'
import {isBlockedAddress} from '../http/ip-ranges.ts'
import {isLoopbackHost} from '../http/loopback.ts'

function bare(hostname: string): string {
  return hostname.replace(/^\[|\]$/g, '').toLowerCase()
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
