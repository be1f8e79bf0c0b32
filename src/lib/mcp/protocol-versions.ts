/**
 * MCP protocol versions (MCP "Lifecycle", version negotiation), newest first. Versions are dates,
 * so they order as strings.
 */
export const KNOWN_PROTOCOL_VERSIONS = [
  '2025-11-25',
  '2025-06-18',
  '2025-03-26',
  '2024-11-05',
  '2024-10-07',
] as const

export const LATEST_PROTOCOL_VERSION = KNOWN_PROTOCOL_VERSIONS[0]

/**
 * The version to answer a client that asked for `requested`, when the server already negotiated
 * `serverVersion` with someone else (one stdio server is initialized once, issue 33): the
 * client's own version when it is a known one no newer than the server's (servers support the
 * versions before their own — the MCP SDKs do), else the server's, which the client may then
 * accept or refuse, as MCP negotiation says.
 */
export function versionFor(requested: unknown, serverVersion: string): string {
  if (typeof requested !== 'string' || requested === serverVersion) return serverVersion
  const known = (KNOWN_PROTOCOL_VERSIONS as readonly string[]).includes(requested)
  return known && requested < serverVersion ? requested : serverVersion
}
