/**
 * A registry entry as a Cedar resource (docs/registry-authz.md):
 * `Server::"<name>"`, child of `Registry::"<registry>"`, with attributes
 *   namespace (the reverse-DNS part before "/"), name, version, status (active | deprecated |
 *   deleted), isLatest, registry, remote (the entry has remotes), packageTypes (set of
 *   `packages[].registryType`), meta (the entry's own `_meta` without the registry's official block,
 *   as a Cedar record: strings, booleans, integral numbers, sets and nested records).
 * Attributes no policy reads are left out (see EntityModel.keeps), which keeps each engine call small.
 */
import type {CedarEntity, CedarValue} from '../authz/cedar-engine.ts'
import {toCedarValue} from '../authz/claims.ts'
import type {EntityModel} from '../authz/entity-model.ts'
import {OFFICIAL_META_KEY, type ServerEntry} from '../registry/types.ts'

export interface ServerEntityOptions {
  /** No policy uses `resource.meta` as a whole value (see usedAsWholeValue): keep named fields only. */
  metaFieldsOnly?: boolean
}

export function serverEntity(
  entry: ServerEntry,
  registry: string,
  model: EntityModel,
  options: ServerEntityOptions = {},
): CedarEntity {
  const server = entry.server
  const official = entry._meta?.[OFFICIAL_META_KEY]
  const attrs: Record<string, CedarValue> = {}
  const put = (name: string, value: () => CedarValue | undefined) => {
    if (!model.keeps(name)) return
    const v = value()
    if (v !== undefined) attrs[name] = v
  }
  put('name', () => server.name)
  put('namespace', () => server.name.slice(0, Math.max(0, server.name.indexOf('/'))))
  put('version', () => server.version)
  put('status', () => official?.status)
  put('isLatest', () => official?.isLatest)
  put('registry', () => registry)
  put('remote', () => Array.isArray(server.remotes) && server.remotes.length > 0)
  put('packageTypes', () => packageTypes(server.packages))
  put('meta', () => {
    const meta = ownMeta(server._meta)
    if (!options.metaFieldsOnly) return meta
    // Publisher blocks carry per-version noise (release timestamps): fields no policy names are
    // left out, so rows that differ only there share one decision.
    return Object.fromEntries(Object.entries(meta).filter(([k]) => model.keeps(k)))
  })
  return {
    uid: {type: 'Server', id: server.name},
    attrs,
    parents: [{type: 'Registry', id: registry}],
  }
}

function packageTypes(packages: unknown): CedarValue[] {
  const types = new Set<string>()
  if (Array.isArray(packages)) {
    for (const p of packages) {
      if (typeof p !== 'object' || p === null) continue
      // `registryType` in current server.json; `registry_name` in drafts that sources still carry.
      const t =
        (p as {registryType?: unknown}).registryType ??
        (p as {registry_name?: unknown}).registry_name
      if (typeof t === 'string' && t !== '') types.add(t)
    }
  }
  return [...types]
}

function ownMeta(meta: unknown): Record<string, CedarValue> {
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) return {}
  const rest = {...(meta as Record<string, unknown>)}
  delete rest[OFFICIAL_META_KEY]
  return (toCedarValue(rest) ?? {}) as Record<string, CedarValue>
}
