import {createHash} from 'node:crypto'
import {existsSync, readFileSync, realpathSync} from 'node:fs'
import {dirname, extname, join, resolve} from 'node:path'
import {parse as parseYaml} from 'yaml'
import {isToolgateError, ToolgateError} from '../errors.ts'
import {xdgDirs} from './xdg.ts'
import type {RegistryDefinition, SourceConfig} from '../registry/types.ts'
import {Checker} from './checker.ts'
import {checkPostgres, type PostgresStorage} from './serve-config-postgres.ts'
import {checkAuth, type AuthConfig, type AuthMode} from './serve-config-auth.ts'
import {checkRegistryAuthz, type RegistryAuthzSpec} from './serve-config-authz.ts'
import {checkRateLimits, type RateLimitsConfig} from './serve-config-rate-limits.ts'
import {checkRegistries, checkSources} from './serve-config-sources.ts'
import {absPath, checkReadableFile} from './config-fields.ts'
import type {NetworkOptions} from '../network/settings.ts'

export {DEFAULT_REALM, type AuthConfig, type AuthMode} from './serve-config-auth.ts'
export {DEFAULT_REGISTRY} from './serve-config-sources.ts'

/**
 * The `toolgate serve` configuration (contract §1 "Configuration file shape"), validated strictly:
 * unknown keys are errors, every error names the field path, all errors are reported together.
 * Relative file paths inside the file are resolved against the directory of the config file.
 */
export type StorageConfig = {kind: 'sqlite'; path: string} | PostgresStorage

export interface ServeConfig {
  sources: SourceConfig[]
  registries: RegistryDefinition[]
  storage: StorageConfig
  auth: AuthConfig
  /** `auth.authz`: the registry's Cedar policy; undefined shows every server to every caller. */
  authz?: RegistryAuthzSpec
  /** `network`: the outbound proxy and extra trust (issue 34); flags win over it. */
  network?: NetworkOptions
  /** `rateLimits`: token buckets per caller for reads (off unless set) and publishing. */
  rateLimits: RateLimitsConfig
  /** Absolute path of the file this came from; undefined for the built-in empty config. */
  file?: string
}

export interface ServeConfigOptions {
  /** `--auth-mode`: overrides `auth.mode` of the file. */
  authMode?: AuthMode
  /** Default SQLite path when `storage` is absent (see defaultRegistryDbPath). */
  defaultDbPath: string
  /** Directory relative paths are resolved against; defaults to the config file's directory. */
  baseDir?: string
}

/**
 * The SQLite file used when the config has no `storage`: one per config file, so two `serve`
 * processes started with different configs never overwrite each other's cache
 * (`<data>/registry-<first 16 hex of sha256(real path of the config)>.db`); without a config file,
 * `<data>/registry.db`. Two processes with the same config share the file, which SQLite's locking
 * and WAL make safe (they cache the same sources).
 */
export function defaultRegistryDbPath(dataDir: string, configFile?: string): string {
  if (!configFile) return join(dataDir, 'registry.db')
  let real = resolve(configFile)
  try {
    real = realpathSync(real)
  } catch {
    // A missing file is reported by the loader; the path as given is enough to name the cache.
  }
  const hash = createHash('sha256').update(real).digest('hex').slice(0, 16)
  return join(dataDir, `registry-${hash}.db`)
}

/** Reads and validates a config file (YAML or JSON, by extension or content). */
export function loadServeConfig(file: string, options: ServeConfigOptions): ServeConfig {
  const abs = resolve(file)
  const doc = parseConfigText(readConfigText(abs, 'config file'), abs)
  return validateServeConfig(doc ?? {}, {...options, baseDir: options.baseDir ?? dirname(abs)}, abs)
}

/** A config file's text; a missing or unreadable file is an error naming it (`<label> <path>: …`). */
export function readConfigText(abs: string, label: string): string {
  try {
    return readFileSync(abs, 'utf8')
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    throw new ToolgateError(
      code === 'ENOENT' ? 'ERR_CONFIG_NOT_FOUND' : 'ERR_FILE_UNREADABLE',
      `${label} ${abs}: ${code === 'ENOENT' ? 'not found' : 'cannot be read'}`,
      {cause: err},
    )
  }
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
  const root =
    c.object(doc, '', ['sources', 'registries', 'storage', 'auth', 'network', 'rateLimits']) ?? {}

  const sources = checkSources(c, root.sources, baseDir)
  const registries = checkRegistries(c, root.registries, sources)
  const storage = checkStorage(c, root.storage, baseDir, options.defaultDbPath)
  const auth = checkAuth(c, root.auth, baseDir, options.authMode)
  const authObj = root.auth
  const authz =
    typeof authObj === 'object' && authObj !== null && !Array.isArray(authObj)
      ? checkRegistryAuthz(c, (authObj as Record<string, unknown>).authz, baseDir)
      : undefined

  const network = checkNetwork(c, root.network, baseDir)
  const rateLimits = checkRateLimits(c, root.rateLimits)
  if (c.problems.length > 0) {
    const where = file ? `config file ${file}` : 'configuration'
    const lines = c.problems.map((p) => `  ${p.path}: ${p.message}`).join('\n')
    throw new ToolgateError('ERR_CONFIG_INVALID', `${where} is invalid:\n${lines}`, {
      details: {problems: c.problems},
    })
  }
  return {
    sources,
    registries,
    storage,
    auth,
    ...(authz ? {authz} : {}),
    ...(network ? {network} : {}),
    rateLimits,
    ...(file ? {file} : {}),
  }
}

/** `network: {proxy, noProxy, caCertPath, useSystemCa}` (docs/network.md). */
function checkNetwork(c: Checker, value: unknown, baseDir: string): NetworkOptions | undefined {
  if (value === undefined || value === null) return undefined
  const o = c.object(value, 'network', [
    'proxy',
    'noProxy',
    'caCertPath',
    'useSystemCa',
    'proxyDns',
  ])
  if (!o) return undefined
  const proxyUrl = c.string(o.proxy, 'network.proxy', {nonEmpty: true})
  if (proxyUrl !== undefined && !/^https?:\/\/[^/\s]+\/?$/i.test(proxyUrl))
    c.add('network.proxy', 'must be an http:// or https:// proxy URL (http://host:port)')
  const noProxy = c.string(o.noProxy, 'network.noProxy')
  const caCert = checkReadableFile(c, o.caCertPath, 'network.caCertPath', baseDir)
  const useSystemCa = c.boolean(o.useSystemCa, 'network.useSystemCa')
  const proxyDns = c.boolean(o.proxyDns, 'network.proxyDns')
  return {
    ...(proxyUrl !== undefined ? {proxyUrl} : {}),
    ...(noProxy !== undefined ? {noProxy} : {}),
    ...(caCert !== undefined ? {caCert} : {}),
    ...(useSystemCa !== undefined ? {useSystemCa} : {}),
    ...(proxyDns !== undefined ? {proxyDns} : {}),
  }
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
  if (o.postgres !== undefined) return checkPostgres(c, o.postgres, baseDir) ?? fallback
  if (o.sqlite !== undefined) {
    const s = c.object(o.sqlite, 'storage.sqlite', ['path'])
    const p = s && c.string(s.path, 'storage.sqlite.path', {required: true})
    return p ? {kind: 'sqlite', path: absPath(p, baseDir)} : fallback
  }
  return fallback
}

/**
 * `toolgate serve`'s configuration: `--config FILE`, else `$XDG_CONFIG_HOME/toolgate/serve.yaml`
 * when it exists, else an empty config (oauth mode without providers, which refuses to start and
 * says how to go on).
 */
export function loadCommandConfig(
  configFlag: string | undefined,
  authMode: AuthMode | undefined,
): ServeConfig {
  const dirs = xdgDirs()
  const implicit = join(dirs.config, 'serve.yaml')
  const file = configFlag ?? (existsSync(implicit) ? implicit : undefined)
  const options = {
    ...(authMode ? {authMode} : {}),
    defaultDbPath: defaultRegistryDbPath(dirs.data, file),
  }
  try {
    return file ? loadServeConfig(file, options) : validateServeConfig({}, options)
  } catch (err) {
    if (file || !isToolgateError(err, 'ERR_CONFIG_INVALID')) throw err
    throw new ToolgateError(
      'ERR_CONFIG_INVALID',
      `no configuration file (looked for ${implicit}); ${err.message}\n` +
        'Pass --config <file> with auth.oauth.resourceUrl and providers, or use --auth-mode anonymous for development.',
      {details: err.details},
    )
  }
}
