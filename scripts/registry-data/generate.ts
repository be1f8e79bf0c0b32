/**
 * Deterministic generator of MCP `server.json` documents (schema 2025-12-11 field names) for the
 * example registry and for benchmark-sized registries. A seeded PRNG keeps output reproducible, so
 * `examples/registry.json` can be regenerated and diffed.
 */
import {CATALOG, type CatalogEntry} from './catalog.ts'

export const SERVER_SCHEMA =
  'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json'
export const PUBLISHER = 'io.modelcontextprotocol.registry/publisher-provided'

export type Json = Record<string, unknown>

/** mulberry32: tiny, fast, good enough for sample data (not for anything secret). */
export function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const REGISTRY_KINDS = ['npm', 'pypi', 'oci', 'nuget', 'mcpb', 'remote'] as const
const TRANSPORTS = ['stdio', 'streamable-http', 'sse'] as const
const DAY = 86_400_000

function shortName(entry: CatalogEntry): string {
  return entry.name.slice(entry.name.indexOf('/') + 1)
}

function owner(entry: CatalogEntry): string {
  return entry.repo.slice(0, entry.repo.indexOf('/'))
}

/** Versions in ascending semver order, each at least one day after the previous. */
function versionHistory(
  rand: () => number,
  count: number,
  start: number,
): {version: string; at: number}[] {
  let major = rand() < 0.3 ? 0 : 1
  let minor = Math.floor(rand() * 4)
  let patch = Math.floor(rand() * 3)
  let at = start
  const out: {version: string; at: number}[] = []
  for (let i = 0; i < count; i++) {
    if (i > 0) {
      const bump = rand()
      if (bump < 0.55) patch++
      else if (bump < 0.9) {
        minor++
        patch = 0
      } else {
        major++
        minor = 0
        patch = 0
      }
      at += (4 + Math.floor(rand() * 30)) * DAY + Math.floor(rand() * DAY)
    }
    out.push({version: `${major}.${minor}.${patch}`, at})
  }
  return out
}

function envVars(entry: CatalogEntry): Json[] {
  return (entry.env ?? []).map(([name, description, isSecret]) => ({
    name,
    description,
    isRequired: true,
    isSecret,
    format: 'string',
  }))
}

/** A package's transport: stdio, or an HTTP transport the package itself listens on. */
function transportFor(kind: string, transport: (typeof TRANSPORTS)[number]): Json {
  if (transport === 'stdio' || kind === 'mcpb') return {type: 'stdio'}
  const path = transport === 'sse' ? '/sse' : '/mcp'
  return {type: transport, url: `http://localhost:{port}${path}`}
}

function portArgs(transport: Json): Json[] {
  if (transport.type === 'stdio') return []
  return [
    {
      type: 'named',
      name: '--port',
      description: 'Port to listen on',
      isRequired: false,
      format: 'number',
      default: '8080',
      valueHint: 'port',
    },
  ]
}

function packageFor(
  entry: CatalogEntry,
  kind: string,
  transportKind: (typeof TRANSPORTS)[number],
  version: string,
  rand: () => number,
): Json | undefined {
  const sn = shortName(entry)
  const org = owner(entry)
  const transport = transportFor(kind, transportKind)
  const env = envVars(entry)
  if (transport.type !== 'stdio') {
    env.push({
      name: 'PORT',
      description: 'Port the server listens on',
      isRequired: false,
      isSecret: false,
      format: 'number',
      default: '8080',
    })
  }
  const withEnv = (pkg: Json): Json => {
    const out: Json = {...pkg}
    // Empty argument lists are noise in server.json: drop them.
    for (const key of ['runtimeArguments', 'packageArguments']) {
      if (Array.isArray(out[key]) && (out[key] as unknown[]).length === 0) delete out[key]
    }
    if (env.length > 0) out.environmentVariables = env
    return out
  }
  switch (kind) {
    case 'npm':
      return withEnv({
        registryType: 'npm',
        registryBaseUrl: 'https://registry.npmjs.org',
        identifier: `@${org}/${sn}-mcp`,
        version,
        runtimeHint: 'npx',
        transport,
        runtimeArguments: [
          {
            type: 'named',
            name: '-y',
            description: 'Install without prompting',
            isRequired: false,
            format: 'boolean',
          },
        ],
        packageArguments: [
          ...portArgs(transport),
          ...(rand() < 0.5
            ? [
                {
                  type: 'named',
                  name: '--log-level',
                  description: 'Log verbosity',
                  isRequired: false,
                  format: 'string',
                  default: 'info',
                  choices: ['debug', 'info', 'warn', 'error'],
                },
              ]
            : []),
        ],
      })
    case 'pypi':
      return withEnv({
        registryType: 'pypi',
        registryBaseUrl: 'https://pypi.org',
        identifier: `${sn}-mcp-server`,
        version,
        runtimeHint: 'uvx',
        transport,
        packageArguments: [
          ...portArgs(transport),
          {
            type: 'positional',
            valueHint: 'data_dir',
            description: 'Directory the server may read',
            isRequired: rand() < 0.5,
            format: 'filepath',
            default: '.',
          },
        ],
      })
    case 'oci':
      return withEnv({
        registryType: 'oci',
        identifier: `ghcr.io/${org}/${sn}-mcp:${version}`,
        runtimeHint: 'docker',
        transport,
        runtimeArguments: [
          {
            type: 'named',
            name: '--rm',
            description: 'Remove the container on exit',
            isRequired: false,
            format: 'boolean',
          },
          {
            type: 'named',
            name: '-i',
            description: 'Keep stdin open',
            isRequired: transport.type === 'stdio',
            format: 'boolean',
          },
          ...(transport.type === 'stdio'
            ? []
            : [
                {
                  type: 'named',
                  name: '-p',
                  value: '{port}:8080',
                  description: 'Publish the HTTP port',
                  isRequired: true,
                  format: 'string',
                },
              ]),
          ...(env.length > 0
            ? [
                {
                  type: 'named',
                  name: '-e',
                  value: '{env_name}',
                  valueHint: 'env_name',
                  description: 'Pass an environment variable',
                  isRequired: false,
                  isRepeated: true,
                  format: 'string',
                },
              ]
            : []),
        ],
      })
    case 'nuget':
      return withEnv({
        registryType: 'nuget',
        registryBaseUrl: 'https://api.nuget.org/v3/index.json',
        identifier: `${org.replace(/(^|-)(\w)/g, (_m, _d, c: string) => c.toUpperCase())}.${sn.replace(/(^|-)(\w)/g, (_m, _d, c: string) => c.toUpperCase())}.Mcp`,
        version,
        runtimeHint: 'dnx',
        transport,
        packageArguments: portArgs(transport),
      })
    case 'mcpb':
      return withEnv({
        registryType: 'mcpb',
        identifier: `https://github.com/${entry.repo}/releases/download/v${version}/${sn}.mcpb`,
        version,
        fileSha256: sha256Like(`${entry.name}@${version}`),
        transport,
      })
    default:
      return undefined
  }
}

/** A stable 64-hex-digit string derived from text (FNV-1a, stretched); sample data, not a real digest. */
function sha256Like(text: string): string {
  let out = ''
  let h = 0x811c9dc5
  for (let round = 0; out.length < 64; round++) {
    for (const ch of `${round}:${text}`) {
      h ^= ch.charCodeAt(0)
      h = Math.imul(h, 0x01000193) >>> 0
    }
    out += h.toString(16).padStart(8, '0')
  }
  return out.slice(0, 64)
}

function remotesFor(entry: CatalogEntry, index: number, kind: string): Json[] {
  const host = entry.website ? new URL(entry.website).host : `mcp.${owner(entry)}.example.com`
  const sn = shortName(entry)
  const remotes: Json[] = []
  const authHeader = {
    name: 'Authorization',
    description: 'Bearer token from your account settings',
    isRequired: true,
    isSecret: true,
    value: 'Bearer {token}',
  }
  if (kind === 'remote' || index % 4 === 0) {
    remotes.push({type: 'streamable-http', url: `https://${host}/${sn}/mcp`, headers: [authHeader]})
  }
  if (kind === 'remote' || index % 7 === 0) {
    remotes.push({
      type: 'sse',
      url: `https://${host}/${sn}/sse`,
      headers: [
        authHeader,
        {
          name: 'X-Workspace',
          description: 'Workspace to act in',
          isRequired: false,
          isSecret: false,
        },
      ],
    })
  }
  return remotes
}

export interface GeneratedVersion {
  server: Json
  publishedAt: string
}

/** All versions of one catalog entry, oldest first. */
export function versionsOf(
  entry: CatalogEntry,
  index: number,
  count: number,
  start: number,
  seed: number,
): GeneratedVersion[] {
  const rand = prng(seed)
  const kind = REGISTRY_KINDS[index % REGISTRY_KINDS.length] as string
  const transportKind =
    TRANSPORTS[Math.floor(index / REGISTRY_KINDS.length) % TRANSPORTS.length] ?? 'stdio'
  const history = versionHistory(rand, count, start)
  return history.map(({version, at}) => {
    const publishedAt = new Date(at).toISOString()
    const pkg = packageFor(entry, kind, transportKind, version, rand)
    // A second package on some servers: the same server shipped through another registry.
    const extra =
      index % 5 === 1 && kind !== 'remote'
        ? packageFor(entry, 'oci', 'stdio', version, rand)
        : undefined
    const server: Json = {
      $schema: SERVER_SCHEMA,
      name: entry.name,
      title: entry.title,
      description: entry.description,
      version,
      websiteUrl: entry.website ?? `https://github.com/${entry.repo}`,
      repository: {
        url: `https://github.com/${entry.repo}`,
        source: 'github',
        ...(index % 3 === 0 ? {subfolder: `servers/${shortName(entry)}`} : {}),
      },
      ...(index % 2 === 0
        ? {
            icons: [
              {
                src: `https://raw.githubusercontent.com/${entry.repo}/main/icon.png`,
                mimeType: 'image/png',
                sizes: ['64x64'],
              },
            ],
          }
        : {}),
    }
    const packages = [pkg, extra].filter((p): p is Json => p !== undefined)
    if (packages.length > 0) server.packages = packages
    const remotes = remotesFor(entry, index, kind)
    if (remotes.length > 0) server.remotes = remotes
    // The registry sets its own `io.modelcontextprotocol.registry/official` block (publishedAt,
    // isLatest); `publisher-provided` is the server.json extension point for publisher data, so
    // the release date travels there for stores and clients that want it.
    server._meta = {[PUBLISHER]: {releasedAt: publishedAt}}
    return {server, publishedAt}
  })
}

/** The example registry: every catalog entry with 2..5 versions. */
export function exampleServers(seed = 20250301): Json[] {
  const base = Date.UTC(2025, 2, 1, 9, 0, 0)
  const rand = prng(seed)
  const out: Json[] = []
  CATALOG.forEach((entry, index) => {
    const count = 2 + Math.floor(rand() * 4)
    const start = base + index * DAY + Math.floor(rand() * DAY)
    for (const v of versionsOf(entry, index, count, start, seed + index)) out.push(v.server)
  })
  return out
}

/**
 * A synthetic registry of exactly `versions` server versions (5 per server), shaped like the
 * example so bodies have realistic sizes. Names sort in a stable, spread-out order.
 */
export function syntheticServers(versions: number, seed = 7): Json[] {
  const perServer = 5
  const servers = Math.ceil(versions / perServer)
  const out: Json[] = []
  const base = Date.UTC(2024, 0, 1)
  for (let i = 0; i < servers; i++) {
    const template = CATALOG[i % CATALOG.length] as CatalogEntry
    const org = `org-${String(i % 997).padStart(3, '0')}`
    const entry: CatalogEntry = {
      ...template,
      name: `io.github.${org}/${shortName(template)}-${String(i).padStart(6, '0')}`,
      repo: `${org}/${shortName(template)}-${i}`,
      title: `${template.title} ${i}`,
    }
    const count = Math.min(perServer, versions - i * perServer)
    for (const v of versionsOf(entry, i, count, base + (i % 365) * DAY, seed + i))
      out.push(v.server)
  }
  return out
}

/** The upstream registry file format (contract §1). */
export function wrap(servers: Json[], lastUpdated: string): Json {
  return {version: '1.0.0', meta: {last_updated: lastUpdated}, data: {servers}}
}
