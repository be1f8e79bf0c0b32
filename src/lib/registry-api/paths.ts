import {ToolgateError} from '../errors.ts'
import {validateServerName} from '../registry/names.ts'
import {checkVersion} from './query.ts'

/**
 * Matches the registry API paths (contract §1, MCP registry API v0.1):
 *   /registry/{registry}/v0.1/servers
 *   /registry/{registry}/v0.1/servers/{serverName}/versions
 *   /registry/{registry}/v0.1/servers/{serverName}/versions/{version}
 * `serverName` arrives URL-encoded (`io.example%2Fweather`); a client that sends the `/` raw is
 * understood too, since everything between `servers/` and the last `/versions` is the name.
 * Validation failures of serverName/version throw ERR_BAD_PARAMETER naming the parameter.
 */
export type RegistryRoute =
  | {kind: 'list_servers'; registry: string}
  | {kind: 'list_versions'; registry: string; serverName: string}
  | {kind: 'get_version'; registry: string; serverName: string; version: string}

const PREFIX = '/registry/'
const API = '/v0.1/servers'

/** Returns undefined when the path is not a registry API path at all (→ 404 `not found`). */
export function matchRegistryPath(path: string): RegistryRoute | undefined {
  if (!path.startsWith(PREFIX)) return undefined
  const regEnd = path.indexOf('/', PREFIX.length)
  if (regEnd === -1) return undefined
  const registry = path.slice(PREFIX.length, regEnd)
  if (!path.startsWith(API, regEnd)) return undefined
  const restStart = regEnd + API.length
  if (restStart === path.length) return {kind: 'list_servers', registry}
  if (path.charCodeAt(restStart) !== 47 /* / */) return undefined
  const rest = path.slice(restStart + 1)
  if (rest.endsWith('/versions')) {
    const raw = rest.slice(0, -'/versions'.length)
    if (raw === '') return undefined
    return {kind: 'list_versions', registry, serverName: decodeServerName(raw)}
  }
  const v = rest.lastIndexOf('/versions/')
  if (v <= 0) return undefined
  const rawVersion = rest.slice(v + '/versions/'.length)
  if (rawVersion === '' || rawVersion.includes('/')) return undefined
  const serverName = decodeServerName(rest.slice(0, v))
  return {
    kind: 'get_version',
    registry,
    serverName,
    version: checkVersion(decode(rawVersion, 'version'), 'version'),
  }
}

function decode(raw: string, param: string): string {
  try {
    return raw.includes('%') ? decodeURIComponent(raw) : raw
  } catch {
    throw new ToolgateError('ERR_BAD_PARAMETER', `${param}: malformed percent-encoding`, {
      details: {parameter: param},
    })
  }
}

function decodeServerName(raw: string): string {
  const name = decode(raw, 'serverName')
  const problem = validateServerName(name)
  if (problem)
    throw new ToolgateError('ERR_BAD_PARAMETER', `serverName: ${problem}`, {
      details: {parameter: 'serverName'},
    })
  return name
}
