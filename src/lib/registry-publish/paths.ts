import {ToolgateError} from '../errors.ts'
import {matchRegistryPath} from '../registry-api/paths.ts'

/**
 * The write routes of the registry API (docs/registry-publish.md):
 *   POST  /registry/{registry}/v0.1/publish
 *   PATCH /registry/{registry}/v0.1/servers/{serverName}/versions/{version}/status
 * Returns undefined for any other path (the read routes, or nothing at all).
 */
export type WriteRoute =
  | {kind: 'publish'; registry: string}
  | {kind: 'set_status'; registry: string; serverName: string; version: string}

const PREFIX = '/registry/'
const PUBLISH = '/v0.1/publish'
const STATUS = '/status'

export function matchWritePath(path: string): WriteRoute | undefined {
  if (!path.startsWith(PREFIX)) return undefined
  if (path.endsWith(PUBLISH)) {
    const registry = path.slice(PREFIX.length, -PUBLISH.length)
    if (registry === '' || registry.includes('/')) return undefined
    return {kind: 'publish', registry}
  }
  if (!path.endsWith(STATUS)) return undefined
  const read = matchRegistryPath(path.slice(0, -STATUS.length))
  if (read?.kind !== 'get_version') return undefined
  if (read.version === 'latest') {
    // The status of one version changes; which one "latest" is moves with the change.
    throw new ToolgateError('ERR_BAD_PARAMETER', 'version: name an exact version, not "latest"', {
      details: {parameter: 'version'},
    })
  }
  return {
    kind: 'set_status',
    registry: read.registry,
    serverName: read.serverName,
    version: read.version,
  }
}

/** The one method each write route accepts. */
export function methodOf(route: WriteRoute): 'POST' | 'PATCH' {
  return route.kind === 'publish' ? 'POST' : 'PATCH'
}
