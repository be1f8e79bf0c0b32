import {accessSync, constants, readFileSync, statSync} from 'node:fs'
import {dirname, extname, isAbsolute, join as joinPath, resolve} from 'node:path'
import {parse as parseYaml} from 'yaml'
import type {OAuthConfig, ProviderConfig} from '../auth/types.ts'
import {ToolgateError} from '../errors.ts'
import type {RegistryDefinition, SourceConfig} from '../registry/types.ts'
import {Checker, isDnsLabel, isLoopbackHost, join, type Obj} from './checker.ts'
import {parseDuration} from './duration.ts'

/**
 * The `toolgate serve` configuration (contract §1 "Configuration file shape"), validated strictly:
 * unknown keys are errors, every error names the field path, all errors are reported together.
 * Relative file paths inside the file are resolved against the directory of the config file.
 */
export type AuthMode = 'oauth' | 'anonymous'

export type StorageConfig =
  | {kind: 'sqlite'; path: string}
  | {
      kind: 'postgres'
      url?: string
      host?: string
      port?: number
      database?: string
      user?: string
      passwordFile?: string
    }

export type AuthConfig = {mode: 'anonymous'} | {mode: 'oauth'; oauth: OAuthConfig}

export interface ServeConfig {
  sources: SourceConfig[]
  registries: RegistryDefinition[]
  storage: StorageConfig
  auth: AuthConfig
  /** Absolute path of the file this came from; undefined for the built-in empty config. */
  file?: string
}

export interface ServeConfigOptions {
  /** `--auth-mode`: overrides `auth.mode` of the file. */
  authMode?: AuthMode
  /** Default SQLite path when `storage` is absent (`<XDG data>/toolgate/registry.db`). */
  defaultDbPath: string
  /** Directory relative paths are resolved against; defaults to the config file's directory. */
  baseDir?: string
}

export const DEFAULT_REALM = 'mcp-registry'
export const DEFAULT_REGISTRY = 'default'

/** Reads and validates a config file (YAML or JSON, by extension or content). */
export function loadServeConfig(file: string, options: ServeConfigOptions): ServeConfig {
  const abs = resolve(file)
  let text: string
  try {
    text = readFileSync(abs, 'utf8')
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    throw new ToolgateError(
      code === 'ENOENT' ? 'ERR_CONFIG_NOT_FOUND' : 'ERR_FILE_UNREADABLE',
      `config file ${abs}: ${code === 'ENOENT' ? 'not found' : 'cannot be read'}`,
      {cause: err},
    )
  }
  const doc = parseConfigText(text, abs)
  return validateServeConfig(doc ?? {}, {...options, baseDir: options.baseDir ?? dirname(abs)}, abs)
}

export function parseConfigText(text: string, file: string): unknown {
  const ext = extname(file).toLowerCase()
  const looksJson = ext === '.json' || (ext !== '.yaml' && ext !== '.yml' && /^\s*[{[]/.test(text))
  try {
    return looksJson ? JSON.parse(text) : parseYaml(text, {uniqueKeys: true, prettyErrors: true})
  } catch (err) {
    const msg = (err as Error).message.split('\n')[0]
    throw new ToolgateError(
      'ERR_CONFIG_INVALID',
      `config file ${file}: not valid ${looksJson ? 'JSON' : 'YAML'}: ${msg}`,
      {
        cause: err,
      },
    )
  }
}

/** Validates a parsed document. `file` only labels the error message. */
export function validateServeConfig(
  doc: unknown,
  options: ServeConfigOptions,
  file?: string,
): ServeConfig {
  const c = new Checker()
  const baseDir = options.baseDir ?? process.cwd()
  const root = c.object(doc, '', ['sources', 'registries', 'storage', 'auth']) ?? {}

  const sources = checkSources(c, root.sources, baseDir)
  const registries = checkRegistries(c, root.registries, sources)
  const storage = checkStorage(c, root.storage, baseDir, options.defaultDbPath)
  const auth = checkAuth(c, root.auth, baseDir, options.authMode)

  if (c.problems.length > 0) {
    const where = file ? `config file ${file}` : 'configuration'
    const lines = c.problems.map((p) => `  ${p.path}: ${p.message}`).join('\n')
    throw new ToolgateError('ERR_CONFIG_INVALID', `${where} is invalid:\n${lines}`, {
      details: {problems: c.problems},
    })
  }
  return {sources, registries, storage, auth, ...(file ? {file} : {})}
}

function absPath(p: string, baseDir: string): string {
  return isAbsolute(p) ? p : joinPath(baseDir, p)
}

function checkUrl(
  c: Checker,
  value: unknown,
  path: string,
  opts: {required?: boolean; httpsUnlessLoopback?: boolean} = {},
) {
  const s = c.string(value, path, {required: opts.required})
  if (s === undefined) return undefined
  let url: URL
  try {
    url = new URL(s)
  } catch {
    // Echo the value only when it cannot hold credentials (user:password@host).
    c.add(path, s.includes('@') ? 'is not a valid URL' : `"${s}" is not a valid URL`)
    return undefined
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    c.add(path, `must be an http(s) URL, got ${url.protocol}`)
    return undefined
  }
  if (url.username || url.password) {
    c.add(path, 'must not carry credentials in the URL')
    return undefined
  }
  if (opts.httpsUnlessLoopback && url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    c.add(
      path,
      `must use https (plain http is allowed only for loopback hosts, got host ${url.hostname})`,
    )
    return undefined
  }
  return s
}

function checkSources(c: Checker, value: unknown, baseDir: string): SourceConfig[] {
  const list = c.array(value, 'sources')
  if (!list) return []
  const out: SourceConfig[] = []
  const seen = new Set<string>()
  list.forEach((item, i) => {
    const p = `sources[${i}]`
    const o = c.object(item, p, ['name', 'file', 'api', 'syncPolicy', 'filter'])
    if (!o) return
    const name = c.string(o.name, join(p, 'name'), {required: true})
    if (name !== undefined) {
      if (!isDnsLabel(name))
        c.add(
          join(p, 'name'),
          `"${name}" must be a DNS label (lower-case letters, digits, -; at most 63)`,
        )
      else if (seen.has(name)) c.add(join(p, 'name'), `duplicate source name "${name}"`)
      seen.add(name)
    }
    const syncIntervalMs = checkSyncPolicy(c, o.syncPolicy, join(p, 'syncPolicy'))
    const filter = checkFilter(c, o.filter, join(p, 'filter'))
    const common = {
      name: name ?? '',
      ...(syncIntervalMs !== undefined ? {syncIntervalMs} : {}),
      ...(filter ? {filter} : {}),
    }
    if ((o.file === undefined) === (o.api === undefined)) {
      c.add(p, 'needs exactly one of "file" or "api"')
      return
    }
    if (o.file !== undefined) {
      const f = c.object(o.file, join(p, 'file'), ['path', 'url'])
      if (!f) return
      if ((f.path === undefined) === (f.url === undefined)) {
        c.add(join(p, 'file'), 'needs exactly one of "path" or "url"')
        return
      }
      if (f.path !== undefined) {
        const fp = c.string(f.path, join(p, 'file.path'), {required: true})
        if (fp !== undefined) out.push({kind: 'file', path: absPath(fp, baseDir), ...common})
      } else {
        const url = checkUrl(c, f.url, join(p, 'file.url'), {required: true})
        // A URL cannot be watched: it is polled, so the interval is required.
        if (syncIntervalMs === undefined)
          c.add(join(p, 'syncPolicy.interval'), 'is required for a file source with a url')
        if (url !== undefined) out.push({kind: 'file', url, ...common})
      }
    } else {
      const a = c.object(o.api, join(p, 'api'), ['endpoint'])
      if (!a) return
      const endpoint = checkUrl(c, a.endpoint, join(p, 'api.endpoint'), {required: true})
      if (syncIntervalMs === undefined)
        c.add(join(p, 'syncPolicy.interval'), 'is required for an api source')
      if (endpoint !== undefined) out.push({kind: 'api', endpoint, ...common})
    }
  })
  return out
}

function checkSyncPolicy(c: Checker, value: unknown, path: string): number | undefined {
  if (value === undefined) return undefined
  const o = c.object(value, path, ['interval'])
  if (!o) return undefined
  const text = c.string(o.interval, join(path, 'interval'), {required: true})
  if (text === undefined) return undefined
  try {
    return parseDuration(text, join(path, 'interval'))
  } catch (err) {
    c.add(join(path, 'interval'), (err as Error).message.replace(/^[^:]*: /, ''))
    return undefined
  }
}

function checkFilter(c: Checker, value: unknown, path: string): SourceConfig['filter'] | undefined {
  if (value === undefined) return undefined
  const o = c.object(value, path, ['names'])
  if (!o || o.names === undefined) return undefined
  const n = c.object(o.names, join(path, 'names'), ['include', 'exclude'])
  if (!n) return undefined
  const include = c.stringList(n.include, join(path, 'names.include'))
  const exclude = c.stringList(n.exclude, join(path, 'names.exclude'))
  return {names: {...(include ? {include} : {}), ...(exclude ? {exclude} : {})}}
}

function checkRegistries(
  c: Checker,
  value: unknown,
  sources: SourceConfig[],
): RegistryDefinition[] {
  const list = c.array(value, 'registries')
  // Absent: one `default` registry fed by every source in the order listed (empty without sources).
  if (!list) return [{name: DEFAULT_REGISTRY, sources: sources.map((s) => s.name)}]
  const known = new Set(sources.map((s) => s.name))
  const seen = new Set<string>()
  const out: RegistryDefinition[] = []
  list.forEach((item, i) => {
    const p = `registries[${i}]`
    const o = c.object(item, p, ['name', 'sources'])
    if (!o) return
    const name = c.string(o.name, join(p, 'name'), {required: true})
    if (name !== undefined) {
      if (!isDnsLabel(name))
        c.add(
          join(p, 'name'),
          `"${name}" must be a DNS label (lower-case letters, digits, -; at most 63)`,
        )
      else if (seen.has(name)) c.add(join(p, 'name'), `duplicate registry name "${name}"`)
      seen.add(name)
    }
    const refs = c.stringList(o.sources, join(p, 'sources')) ?? []
    if (o.sources === undefined) c.add(join(p, 'sources'), 'is required (a list of source names)')
    const dupes = new Set<string>()
    refs.forEach((ref, j) => {
      if (!known.has(ref)) c.add(`${p}.sources[${j}]`, `unknown source "${ref}"`)
      if (dupes.has(ref)) c.add(`${p}.sources[${j}]`, `source "${ref}" listed twice`)
      dupes.add(ref)
    })
    if (name !== undefined) out.push({name, sources: refs})
  })
  return out
}

function checkStorage(
  c: Checker,
  value: unknown,
  baseDir: string,
  defaultDbPath: string,
): StorageConfig {
  const fallback: StorageConfig = {kind: 'sqlite', path: defaultDbPath}
  if (value === undefined || value === null) return fallback
  const o = c.object(value, 'storage', ['sqlite', 'postgres'])
  if (!o) return fallback
  if (o.sqlite !== undefined && o.postgres !== undefined) {
    c.add('storage', 'set either "sqlite" or "postgres", not both')
    return fallback
  }
  if (o.postgres !== undefined) {
    const pg = c.object(o.postgres, 'storage.postgres', [
      'url',
      'host',
      'port',
      'database',
      'user',
      'passwordFile',
    ])
    if (!pg) return fallback
    const url = c.string(pg.url, 'storage.postgres.url')
    if (url !== undefined && !/^postgres(ql)?:\/\//.test(url))
      c.add('storage.postgres.url', 'must start with postgres:// or postgresql://')
    const host = c.string(pg.host, 'storage.postgres.host')
    const database = c.string(pg.database, 'storage.postgres.database')
    const user = c.string(pg.user, 'storage.postgres.user')
    const passwordFile = checkReadableFile(
      c,
      pg.passwordFile,
      'storage.postgres.passwordFile',
      baseDir,
    )
    let port: number | undefined
    if (pg.port !== undefined) {
      if (
        typeof pg.port !== 'number' ||
        !Number.isInteger(pg.port) ||
        pg.port < 1 ||
        pg.port > 65535
      ) {
        c.add('storage.postgres.port', 'must be an integer 1..65535')
      } else port = pg.port
    }
    if (url === undefined && host === undefined) c.add('storage.postgres', 'needs "url" or "host"')
    return {
      kind: 'postgres',
      ...(url !== undefined ? {url} : {}),
      ...(host !== undefined ? {host} : {}),
      ...(port !== undefined ? {port} : {}),
      ...(database !== undefined ? {database} : {}),
      ...(user !== undefined ? {user} : {}),
      ...(passwordFile !== undefined ? {passwordFile} : {}),
    }
  }
  if (o.sqlite !== undefined) {
    const s = c.object(o.sqlite, 'storage.sqlite', ['path'])
    const p = s && c.string(s.path, 'storage.sqlite.path', {required: true})
    return p ? {kind: 'sqlite', path: absPath(p, baseDir)} : fallback
  }
  return fallback
}

function checkReadableFile(
  c: Checker,
  value: unknown,
  path: string,
  baseDir: string,
  owner?: string,
): string | undefined {
  const s = c.string(value, path, {nonEmpty: true})
  if (s === undefined) return undefined
  const abs = absPath(s, baseDir)
  const who = owner ? `${owner}: ` : ''
  try {
    if (!statSync(abs).isFile()) {
      c.add(path, `${who}${abs} is not a regular file`)
      return undefined
    }
    accessSync(abs, constants.R_OK)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    c.add(
      path,
      `${who}cannot read ${abs} (${code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code})`,
    )
    return undefined
  }
  return abs
}

function checkAuth(
  c: Checker,
  value: unknown,
  baseDir: string,
  override: AuthMode | undefined,
): AuthConfig {
  const o: Obj =
    value === undefined || value === null ? {} : (c.object(value, 'auth', ['mode', 'oauth']) ?? {})
  let mode: AuthMode = 'oauth' // secure by default: absent auth or absent mode means oauth
  const fileMode = c.string(o.mode, 'auth.mode')
  if (fileMode !== undefined) {
    if (fileMode === 'oauth' || fileMode === 'anonymous') mode = fileMode
    else c.add('auth.mode', `must be "oauth" or "anonymous", got "${fileMode}"`)
  }
  if (override) mode = override
  // The oauth section is checked whenever present, so a typo does not hide until oauth is switched on.
  const oauth =
    o.oauth === undefined || o.oauth === null
      ? undefined
      : checkOAuth(c, o.oauth, baseDir, mode === 'oauth')
  if (mode === 'anonymous') return {mode}
  if (o.oauth === undefined || o.oauth === null) {
    c.add(
      'auth.oauth',
      'is required in oauth mode (the default): set auth.oauth.resourceUrl and at least one provider, ' +
        'or run with --auth-mode anonymous for an unauthenticated development server',
    )
  }
  return {
    mode,
    oauth: oauth ?? {resourceUrl: '', realm: DEFAULT_REALM, publicPaths: [], providers: []},
  }
}

function checkOAuth(
  c: Checker,
  value: unknown,
  baseDir: string,
  required: boolean,
): OAuthConfig | undefined {
  const o = c.object(value, 'auth.oauth', ['resourceUrl', 'realm', 'publicPaths', 'providers'])
  if (!o) return undefined
  const resourceUrl = checkUrl(c, o.resourceUrl, 'auth.oauth.resourceUrl', {required})
  const realm = c.string(o.realm, 'auth.oauth.realm', {nonEmpty: true}) ?? DEFAULT_REALM
  const publicPaths = c.stringList(o.publicPaths, 'auth.oauth.publicPaths') ?? []
  publicPaths.forEach((pp, i) => {
    if (!pp.startsWith('/')) c.add(`auth.oauth.publicPaths[${i}]`, `"${pp}" must start with /`)
    else if (/%|\.\.|[\s?#]/.test(pp))
      c.add(
        `auth.oauth.publicPaths[${i}]`,
        `"${pp}" must be a plain path (no %, .., whitespace, ? or #)`,
      )
  })
  const list = c.array(o.providers, 'auth.oauth.providers', {required})
  if (required && list && list.length === 0)
    c.add('auth.oauth.providers', 'needs at least one provider in oauth mode')
  const providers: ProviderConfig[] = []
  const names = new Set<string>()
  ;(list ?? []).forEach((item, i) => {
    const p = `auth.oauth.providers[${i}]`
    const pr = checkProvider(c, item, p, baseDir)
    if (!pr) return
    if (names.has(pr.name)) c.add(join(p, 'name'), `duplicate provider name "${pr.name}"`)
    names.add(pr.name)
    providers.push(pr)
  })
  return {resourceUrl: resourceUrl ?? '', realm, publicPaths, providers}
}

const PROVIDER_KEYS = [
  'name',
  'issuerUrl',
  'audience',
  'jwksUrl',
  'introspectionUrl',
  'clientId',
  'clientSecretFile',
  'caCertPath',
  'authTokenFile',
  'allowPrivateIP',
] as const

function checkProvider(
  c: Checker,
  value: unknown,
  p: string,
  baseDir: string,
): ProviderConfig | undefined {
  const o = c.object(value, p, PROVIDER_KEYS)
  if (!o) return undefined
  const name = c.string(o.name, join(p, 'name'), {required: true})
  const owner = `provider "${name ?? '?'}"`
  const tls = {httpsUnlessLoopback: true}
  const issuerUrl = checkUrl(c, o.issuerUrl, join(p, 'issuerUrl'), {required: true, ...tls})
  const audience = c.string(o.audience, join(p, 'audience'), {required: true})
  const jwksUrl = checkUrl(c, o.jwksUrl, join(p, 'jwksUrl'), tls)
  const introspectionUrl = checkUrl(c, o.introspectionUrl, join(p, 'introspectionUrl'), tls)
  const clientId = c.string(o.clientId, join(p, 'clientId'), {nonEmpty: true})
  const clientSecretFile = checkReadableFile(
    c,
    o.clientSecretFile,
    join(p, 'clientSecretFile'),
    baseDir,
    owner,
  )
  const caCertPath = checkReadableFile(c, o.caCertPath, join(p, 'caCertPath'), baseDir, owner)
  const authTokenFile = checkReadableFile(
    c,
    o.authTokenFile,
    join(p, 'authTokenFile'),
    baseDir,
    owner,
  )
  const allowPrivateIP = c.boolean(o.allowPrivateIP, join(p, 'allowPrivateIP'))
  if (clientSecretFile && clientId === undefined)
    c.add(join(p, 'clientId'), 'is required when clientSecretFile is set')
  if (clientSecretFile && readTrimmed(clientSecretFile) === '')
    c.add(join(p, 'clientSecretFile'), `${owner}: ${clientSecretFile} is empty`)
  if (authTokenFile && readTrimmed(authTokenFile) === '')
    c.add(join(p, 'authTokenFile'), `${owner}: ${authTokenFile} is empty`)
  if (name === undefined || issuerUrl === undefined || audience === undefined) return undefined
  return {
    name,
    issuerUrl,
    audience,
    ...(jwksUrl !== undefined ? {jwksUrl} : {}),
    ...(introspectionUrl !== undefined ? {introspectionUrl} : {}),
    ...(clientId !== undefined ? {clientId} : {}),
    ...(clientSecretFile !== undefined ? {clientSecretFile} : {}),
    ...(caCertPath !== undefined ? {caCertPath} : {}),
    ...(authTokenFile !== undefined ? {authTokenFile} : {}),
    ...(allowPrivateIP !== undefined ? {allowPrivateIP} : {}),
  }
}

function readTrimmed(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim()
  } catch {
    return ''
  }
}
