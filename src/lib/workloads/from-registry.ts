import {ToolgateError} from '../errors.ts'
import {isLoopbackHost} from '../http/loopback.ts'
import {isRecord} from '../mcp/json-rpc.ts'

/**
 * `toolgate run NAME --from-registry <registry base URL> <server>[@version]`: resolves a server
 * entry of an MCP registry (API v0.1 — ours, `…/registry/<name>`, or the official one) into what
 * `run` starts: an npm package as `npx -y <pkg>@<version>`, a PyPI one as `uvx <pkg>==<version>`,
 * an OCI image as `docker run -i --rm <image>:<version>`, or a remote as `--url`. The entry's
 * declared environment variables must be supplied (-e, --env-file, --secret or the environment);
 * a missing required one is an error that names it. Declared defaults are applied.
 */

export interface RegistryResolution {
  serverName: string
  version: string
  command?: string[]
  url?: string
  transport: 'stdio' | 'remote'
  /** Declared defaults for variables the user did not set. */
  defaults: Record<string, string>
  required: Array<{name: string; description?: string; secret: boolean}>
  /** Hosts (and ports) the entry declares its server needs (`permissions.network.outbound`). */
  hosts?: string[]
  ports?: number[]
  /** The npm registry the package comes from (`registryBaseUrl`), for the sandbox's install. */
  npmRegistry?: string
  /** The PyPI index (`registryBaseUrl` + `/simple/`), for the sandbox's install. */
  pypiIndex?: string
}

/** Where the sandbox installs a package from: the registry the entry names for it, if any. */
function packageSource(pkg: Record<string, unknown>): {npmRegistry?: string; pypiIndex?: string} {
  const base = pkg.registryBaseUrl
  if (typeof base !== 'string') return {}
  if (pkg.registryType === 'npm') return {npmRegistry: base}
  if (pkg.registryType === 'pypi') return {pypiIndex: `${base.replace(/\/+$/, '')}/simple/`}
  return {}
}

const RUNNERS: Record<string, (id: string, version: string) => string[]> = {
  npm: (id, v) => ['npx', '-y', `${id}@${v}`],
  pypi: (id, v) => ['uvx', `${id}==${v}`],
  oci: (id, v) => ['docker', 'run', '-i', '--rm', id.includes(':') ? id : `${id}:${v}`],
}

export function parseServerRef(ref: string): {name: string; version: string} {
  const at = ref.lastIndexOf('@')
  const name = at > 0 ? ref.slice(0, at) : ref
  const version = at > 0 ? ref.slice(at + 1) : 'latest'
  if (!/^[A-Za-z0-9.-]+\/[A-Za-z0-9._-]+$/.test(name) || version === '') {
    throw new ToolgateError(
      'ERR_USAGE',
      `--from-registry: "${ref.slice(0, 120)}" is not <namespace/name>[@version] (e.g. io.github.acme/weather@1.2.0)`,
    )
  }
  return {name, version}
}

export async function fetchServerEntry(
  base: string,
  ref: {name: string; version: string},
  /** A bearer token for a protected registry (--from-registry-token-file); never logged. */
  token?: string,
): Promise<Record<string, unknown>> {
  let url: URL
  try {
    url = new URL(base)
  } catch {
    throw new ToolgateError('ERR_USAGE', `--from-registry: "${base.slice(0, 120)}" is not a URL`)
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new ToolgateError('ERR_USAGE', '--from-registry: the registry URL must be http(s)')
  if (token && url.protocol === 'http:' && !isLoopbackHost(url.hostname))
    throw new ToolgateError(
      'ERR_USAGE',
      '--from-registry-token-file: a token goes over https only (plain http is readable on the way); loopback excepted',
    )
  const path = `${url.pathname.replace(/\/+$/, '')}/v0.1/servers/${encodeURIComponent(ref.name)}/versions/${encodeURIComponent(ref.version)}`
  // The operator typed this URL: it may be on a private network (a registry next to them).
  // Loaded here: the background process of a workload imports this module without resolving
  // anything, and need not carry the HTTP client library (issue 11).
  const {createOutboundClient} = await import('../http/outbound.ts')
  const client = createOutboundClient({timeoutMs: 15_000, allowPrivateIP: true, label: 'registry'})
  try {
    const res = await client.fetchJson(new URL(path, url), {
      maxBytes: 4 * 1024 * 1024,
      ...(token ? {headers: {authorization: `Bearer ${token}`}} : {}),
    })
    if (res.status === 401 || res.status === 403) {
      throw new ToolgateError(
        res.status === 401 ? 'ERR_AUTH_INVALID_TOKEN' : 'ERR_FORBIDDEN',
        `--from-registry: the registry at ${url.origin}${url.pathname} answered ${res.status}` +
          (token ? '' : ': a protected registry; pass --from-registry-token-file'),
      )
    }
    if (res.status === 404) {
      throw new ToolgateError(
        'ERR_NOT_FOUND',
        `--from-registry: ${ref.name}@${ref.version} is not in the registry at ${url.origin}${url.pathname}`,
      )
    }
    if (res.status !== 200 || !isRecord(res.body) || !isRecord(res.body.server)) {
      throw new ToolgateError(
        'ERR_UPSTREAM',
        `--from-registry: the registry answered ${res.status} without a server entry`,
      )
    }
    return res.body.server
  } finally {
    await client.close()
  }
}

export function resolveEntry(server: Record<string, unknown>): RegistryResolution {
  const serverName = String(server.name ?? '')
  const version = String(server.version ?? '')
  const packages = Array.isArray(server.packages) ? server.packages.filter(isRecord) : []
  const remotes = Array.isArray(server.remotes) ? server.remotes.filter(isRecord) : []
  for (const pkg of packages) {
    const runner = RUNNERS[String(pkg.registryType)]
    const transport = isRecord(pkg.transport) ? pkg.transport.type : 'stdio'
    if (!runner || transport !== 'stdio' || typeof pkg.identifier !== 'string') continue
    const pkgVersion = typeof pkg.version === 'string' ? pkg.version : version
    const command = [...runner(pkg.identifier, pkgVersion), ...packageArguments(pkg, serverName)]
    const registry = packageSource(pkg)
    return {
      serverName,
      version,
      command,
      transport: 'stdio',
      ...declaredEnv(pkg),
      ...declaredNetwork(server),
      ...registry,
    }
  }
  const remote =
    remotes.find((r) => typeof r.url === 'string' && r.type === 'streamable-http') ??
    remotes.find((r) => typeof r.url === 'string')
  if (remote) {
    return {
      serverName,
      version,
      url: String(remote.url),
      transport: 'remote',
      defaults: {},
      required: [],
    }
  }
  const kinds = packages.map(
    (p) => `${p.registryType}/${isRecord(p.transport) ? p.transport.type : '?'}`,
  )
  throw new ToolgateError(
    'ERR_USAGE',
    `--from-registry: ${serverName}@${version} has no package toolgate can run (npm, pypi or oci over stdio) and no remote${kinds.length ? `; it offers ${kinds.join(', ')}` : ''}`,
  )
}

/**
 * The outbound network a registry entry declares (ToolHive's `permissions` shape), read from the
 * entry itself or its publisher-provided metadata. Only hosts that are names are taken.
 */
function declaredNetwork(server: Record<string, unknown>): {hosts?: string[]; ports?: number[]} {
  const meta = isRecord(server._meta) ? server._meta : {}
  const publisher = meta['io.modelcontextprotocol.registry/publisher-provided']
  const permissions = [server.permissions, isRecord(publisher) ? publisher.permissions : undefined]
  for (const p of permissions) {
    const outbound = isRecord(p) && isRecord(p.network) ? p.network.outbound : undefined
    if (!isRecord(outbound)) continue
    const hosts = Array.isArray(outbound.allow_host)
      ? outbound.allow_host.filter(
          (h): h is string => typeof h === 'string' && /^\.?[A-Za-z0-9.-]+$/.test(h),
        )
      : []
    const ports = Array.isArray(outbound.allow_port)
      ? outbound.allow_port.filter((n): n is number => Number.isInteger(n) && n > 0 && n < 65536)
      : []
    if (hosts.length > 0) return {hosts, ports}
  }
  return {}
}

function declaredEnv(
  pkg: Record<string, unknown>,
): Pick<RegistryResolution, 'defaults' | 'required'> {
  const defaults: Record<string, string> = {}
  const required: RegistryResolution['required'] = []
  const vars = Array.isArray(pkg.environmentVariables)
    ? pkg.environmentVariables.filter(isRecord)
    : []
  for (const v of vars) {
    if (typeof v.name !== 'string') continue
    const value =
      typeof v.value === 'string' ? v.value : typeof v.default === 'string' ? v.default : undefined
    if (value !== undefined) defaults[v.name] = value
    else if (v.isRequired === true) {
      required.push({
        name: v.name,
        ...(typeof v.description === 'string' ? {description: v.description} : {}),
        secret: v.isSecret === true,
      })
    }
  }
  return {defaults, required}
}

/** Positional and named package arguments that carry a value (or default); a required one without is an error. */
function packageArguments(pkg: Record<string, unknown>, serverName: string): string[] {
  const args = Array.isArray(pkg.packageArguments) ? pkg.packageArguments.filter(isRecord) : []
  const out: string[] = []
  for (const a of args) {
    const value =
      typeof a.value === 'string' ? a.value : typeof a.default === 'string' ? a.default : undefined
    if (value === undefined) {
      if (a.isRequired === true) {
        throw new ToolgateError(
          'ERR_USAGE',
          `--from-registry: ${serverName} needs the argument ${String(a.name ?? a.valueHint ?? '?')}, which has no value; run it with an explicit command after --`,
        )
      }
      continue
    }
    if (a.type === 'named' && typeof a.name === 'string') out.push(a.name, value)
    else out.push(value)
  }
  return out
}

/** The required variables none of the sources provide, as one error naming each. */
export function checkRequiredEnv(resolution: RegistryResolution, env: NodeJS.ProcessEnv): void {
  const missing = resolution.required.filter((v) => env[v.name] === undefined || env[v.name] === '')
  if (missing.length === 0) return
  const lines = missing.map(
    (v) =>
      `  ${v.name}${v.description ? ` (${v.description})` : ''}: ${v.secret ? `--secret <name>,target=${v.name}` : `-e ${v.name}=…`}`,
  )
  throw new ToolgateError(
    'ERR_USAGE',
    `${resolution.serverName}@${resolution.version} needs environment variables that are not set:\n${lines.join('\n')}`,
  )
}
