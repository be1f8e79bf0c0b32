import type {ServerJson} from './types.ts'

/**
 * What the list filters ask about an entry (`transport`, `type`, `registryType`), as bits of one
 * integer computed once when a version is stored (`traits` of source_versions and
 * registry_entries). A filter is then `traits & mask = mask` on the row the page scan reads
 * anyway: no document is parsed per request.
 */
export const TRANSPORTS = {stdio: 1, 'streamable-http': 2, sse: 4} as const
export const KINDS = {package: 8, remote: 16} as const
export const REGISTRY_TYPES = {npm: 32, pypi: 64, oci: 128, nuget: 256, mcpb: 512} as const

const has = <T extends object>(table: T, key: unknown): key is keyof T =>
  typeof key === 'string' && Object.prototype.hasOwnProperty.call(table, key)

export function traitsOf(server: ServerJson): number {
  let bits = 0
  const packages = Array.isArray(server.packages) ? server.packages : []
  const remotes = Array.isArray(server.remotes) ? server.remotes : []
  if (packages.length > 0) bits |= KINDS.package
  if (remotes.length > 0) bits |= KINDS.remote
  for (const p of packages) {
    if (typeof p !== 'object' || p === null || Array.isArray(p)) continue
    const t = (p.transport as {type?: unknown} | null | undefined)?.type
    if (has(TRANSPORTS, t)) bits |= TRANSPORTS[t]
    const r = p.registryType
    if (has(REGISTRY_TYPES, r)) bits |= REGISTRY_TYPES[r]
  }
  for (const r of remotes) {
    if (typeof r !== 'object' || r === null || Array.isArray(r)) continue
    if (has(TRANSPORTS, r.type)) bits |= TRANSPORTS[r.type]
  }
  return bits
}

/**
 * The same bits computed in SQL from `server_json`, for the migration that fills the column in
 * rows stored before it existed. `exists(path, field, value)` and `nonEmpty(path)` are the
 * dialect's JSON tests; the result must equal traitsOf for every document (tested).
 */
export function traitsSql(
  exists: (array: 'packages' | 'remotes', field: string, value: string) => string,
  nonEmpty: (array: 'packages' | 'remotes') => string,
): string {
  const terms: string[] = []
  for (const [name, bit] of Object.entries(TRANSPORTS)) {
    terms.push(
      `(CASE WHEN ${exists('packages', 'transport.type', name)} OR ${exists('remotes', 'type', name)} THEN ${bit} ELSE 0 END)`,
    )
  }
  terms.push(`(CASE WHEN ${nonEmpty('packages')} THEN ${KINDS.package} ELSE 0 END)`)
  terms.push(`(CASE WHEN ${nonEmpty('remotes')} THEN ${KINDS.remote} ELSE 0 END)`)
  for (const [name, bit] of Object.entries(REGISTRY_TYPES)) {
    terms.push(`(CASE WHEN ${exists('packages', 'registryType', name)} THEN ${bit} ELSE 0 END)`)
  }
  return terms.join(' + ')
}
