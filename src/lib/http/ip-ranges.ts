import {BlockList, isIP, isIPv4} from 'node:net'

/**
 * Address ranges an outbound call to a provider must not reach unless the operator allows private
 * addresses (contract §1 "Outbound calls", §2 "Outbound trust"). Names are what the refusal reports.
 *
 * IPv6 forms that embed an IPv4 address (IPv4-mapped ::ffff:a.b.c.d, IPv4-compatible ::a.b.c.d,
 * NAT64 64:ff9b::/96, 6to4 2002::/16) are judged by the embedded IPv4 address, so
 * `[::ffff:127.0.0.1]` is loopback like `127.0.0.1`.
 */
const V4: Array<[string, number, string]> = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
]
const V6: Array<[string, number, string]> = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['fc00::', 7, 'unique-local'],
  ['ff00::', 8, 'multicast'],
  ['100::', 64, 'discard-only'],
]

const lists = new Map<string, BlockList>()
for (const [net, prefix, name] of [...V4, ...V6]) {
  let list = lists.get(name)
  if (!list) lists.set(name, (list = new BlockList()))
  list.addSubnet(net, prefix, isIPv4(net) ? 'ipv4' : 'ipv6')
}

/**
 * The name of the blocked range `address` falls in, or undefined when it is a public address.
 * Anything that is not a valid IP literal counts as blocked ("not an IP address"): deny when unsure.
 */
export function blockedRange(address: string): string | undefined {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address
  const withoutZone = bare.replace(/%.*$/, '')
  const family = isIP(withoutZone)
  if (family === 0) return 'not an IP address'
  if (family === 6) {
    const embedded = embeddedIPv4(withoutZone)
    if (embedded !== undefined) return blockedRange(embedded)
  }
  const type = family === 4 ? 'ipv4' : 'ipv6'
  for (const [name, list] of lists) if (list.check(withoutZone, type)) return name
  return undefined
}

export function isBlockedAddress(address: string): boolean {
  return blockedRange(address) !== undefined
}

/** Expands an IPv6 literal to its eight 16-bit groups (input already validated by isIP, no zone). */
export function hextets(ip: string): number[] {
  let text = ip.toLowerCase()
  // A dotted-quad tail (::ffff:1.2.3.4) becomes two hex groups first.
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number]
    text = text.slice(0, v4.index) + ((a << 8) | b).toString(16) + ':' + ((c << 8) | d).toString(16)
  }
  const [head = '', rest] = text.split('::')
  const h = head ? head.split(':').map((x) => parseInt(x, 16)) : []
  const r = rest !== undefined && rest !== '' ? rest.split(':').map((x) => parseInt(x, 16)) : []
  const fill = 8 - h.length - r.length
  return [...h, ...(rest !== undefined ? new Array<number>(Math.max(fill, 0)).fill(0) : []), ...r]
}

function embeddedIPv4(ip: string): string | undefined {
  const g = hextets(ip)
  if (g.length !== 8) return undefined
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0)
  // ::ffff:a.b.c.d (RFC 4291 §2.5.5.2) and deprecated ::a.b.c.d (§2.5.5.1, not :: or ::1)
  if (zeros(0, 5) && g[5] === 0xffff) return v4(g[6]!, g[7]!)
  if (zeros(0, 6) && (g[6] !== 0 || g[7]! > 1)) return v4(g[6]!, g[7]!)
  // NAT64 well-known prefix 64:ff9b::/96 (RFC 6052) and 6to4 2002::/16 (RFC 3056)
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return v4(g[6]!, g[7]!)
  if (g[0] === 0x2002) return v4(g[1]!, g[2]!)
  return undefined
}
