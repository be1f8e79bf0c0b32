import {isIP} from 'node:net'
import {hextets} from './ip-ranges.ts'

/**
 * Whether a host names this machine's loopback interface by its spelling alone (no DNS). Used to
 * relax rules (plain http to a provider, the default Origin allowlist of a loopback bind), so it
 * errs on the side of "not loopback":
 *
 * - `localhost` and names under it (`a.localhost`), with or without the root dot: RFC 6761 §6.3
 *   reserves them for loopback, and resolvers (and browsers, Secure Contexts §3.2) answer them so.
 * - IPv4 127.0.0.0/8 (RFC 1122 §3.2.1.3) in dotted-quad form.
 * - IPv6 ::1 in any textual form (RFC 4291 §2.2: `0:0:0:0:0:0:0:1`, `0::1`, …) and the
 *   IPv4-mapped form of 127/8 (`::ffff:127.0.0.1`, `::ffff:7f00:1`; RFC 4291 §2.5.5.2), which is
 *   what `new URL()` produces for a mapped literal.
 * - Brackets (`[::1]`, as URL.hostname keeps them) are accepted; case does not matter.
 *
 * Not loopback: zone ids (`::1%lo`: URL hosts cannot carry them, and a bind address with one is
 * unusual enough to refuse), the deprecated IPv4-compatible `::127.0.0.1`, NAT64 `64:ff9b::/96`
 * and 6to4 `2002::/16` (they reach a translator or relay, not this machine; ip-ranges.ts still
 * blocks them as outbound destinations), and the shorthand IPv4 forms `127.1` / `2130706433`
 * that only URL parsing normalises (URL.hostname is already dotted-quad).
 */
export function isLoopbackHost(host: string): boolean {
  let h = host.toLowerCase()
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1)
  if (h.includes('%')) return false
  if (h.endsWith('.') && !h.includes(':')) h = h.slice(0, -1)
  if (h === 'localhost' || LOCALHOST_SUBDOMAIN.test(h)) return true
  const family = isIP(h)
  if (family === 4) return h.startsWith('127.')
  if (family === 6) return isLoopbackV6(h)
  return false
}

// One or more DNS labels (RFC 1123 §2.1 letters, digits, hyphens) followed by `.localhost`.
const LOCALHOST_SUBDOMAIN = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+localhost$/

function isLoopbackV6(ip: string): boolean {
  const g = hextets(ip)
  if (g.length !== 8) return false
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0)
  if (zeros(0, 7) && g[7] === 1) return true
  // ::ffff:127.x.y.z — the high byte of the seventh group is the first octet of the IPv4 address.
  return zeros(0, 5) && g[5] === 0xffff && g[6]! >> 8 === 127
}
