import {parseDuration} from '../config/duration.ts'
import {ToolgateError} from '../errors.ts'
import {readSecretFile} from '../fs/secret-file.ts'
import {isLoopbackHost} from '../http/loopback.ts'

/** The `--remote-auth*` flags as oclif parses them (names exactly as the spec spells them). */
export interface RemoteAuthFlags {
  'remote-auth'?: boolean
  'remote-auth-issuer'?: string
  'remote-auth-authorize-url'?: string
  'remote-auth-token-url'?: string
  'remote-auth-client-id'?: string
  'remote-auth-client-secret'?: string
  'remote-auth-client-secret-file'?: string
  'remote-auth-client-secret-name'?: string
  'remote-auth-callback-port'?: number
  'remote-auth-scopes'?: string[] | string
  'remote-auth-scope-param-name'?: string
  'remote-auth-resource'?: string
  'remote-auth-skip-browser'?: boolean
  'remote-auth-timeout'?: string
  'remote-auth-bearer-token'?: string
  'remote-auth-bearer-token-file'?: string
  'remote-auth-flow'?: string
  'remote-auth-grant'?: string
  'remote-auth-client-key-file'?: string
  'non-interactive'?: boolean
}

/** How a person logs in: a browser on this machine, or a code approved elsewhere (RFC 8628). */
export type LoginFlow = 'browser' | 'device' | 'auto'
export const LOGIN_FLOWS: LoginFlow[] = ['browser', 'device', 'auto']
/** authorization_code: a person logs in; client_credentials: a machine identity (CI). */
export type RemoteGrant = 'authorization_code' | 'client_credentials'
export const REMOTE_GRANTS: RemoteGrant[] = ['authorization_code', 'client_credentials']

export interface RemoteAuthOptions {
  targetUri: URL
  issuer?: URL
  authorizeUrl?: URL
  tokenUrl?: URL
  clientId?: string
  clientSecret?: string
  callbackPort: number
  /** Undefined: the default for the server found (OIDC: openid profile email). */
  scopes?: string[]
  scopeParamName?: string
  resource?: string
  skipBrowser: boolean
  timeoutMs: number
  /** Default (absent): browser. The flags default to auto. */
  flow?: LoginFlow
  grant?: RemoteGrant
  /** private_key_jwt (RFC 7523) key for the client credentials grant. */
  clientKeyFile?: string
  /** Where `auto` looks: whether anyone can act, and whether a browser can open here. */
  session?: LoginSession
}

export interface LoginSession {
  /** False under CI or --non-interactive: nothing may wait for a person. */
  interactive: boolean
  /** A graphical session on this machine (a browser can open). */
  display: boolean
  /** stdin or stderr is a terminal (a person can read a code over SSH). */
  tty: boolean
}

/**
 * What this process can ask of a person. CI (any non-empty value but "false"/"0") and
 * `--non-interactive` mean nobody; a display means a browser can open (desktop apps start us with
 * pipes, not a TTY, and their user can still log in); SSH sessions have a TTY but no display.
 */
export function detectLoginSession(
  env: NodeJS.ProcessEnv,
  flags: {'non-interactive'?: boolean},
  tty: boolean,
  platform: NodeJS.Platform = process.platform,
): LoginSession {
  const ci = env.CI !== undefined && env.CI !== '' && env.CI !== 'false' && env.CI !== '0'
  const ssh = Boolean(env.SSH_CONNECTION || env.SSH_TTY)
  const display =
    platform === 'win32' || platform === 'darwin'
      ? !ssh
      : Boolean(env.DISPLAY || env.WAYLAND_DISPLAY)
  return {interactive: !ci && flags['non-interactive'] !== true, display, tty}
}

export const DEFAULT_CALLBACK_PORT = 8666
export const DEFAULT_TIMEOUT = '30s'
export const OIDC_DEFAULT_SCOPES = ['openid', 'profile', 'email']
export const CLIENT_SECRET_ENV = 'TOOLGATE_REMOTE_OAUTH_CLIENT_SECRET'

const usage = (message: string) => new ToolgateError('ERR_USAGE', message)

/** A typed endpoint URL: absolute, https unless loopback (tokens must not cross a network in clear). */
function endpointUrl(text: string, flag: string): URL {
  if (!URL.canParse(text)) throw usage(`${flag}: "${text}" is not an absolute URL`)
  const url = new URL(text)
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
    throw usage(
      `${flag}: must use https (http is allowed only for loopback hosts), got ${url.protocol}//${url.host}`,
    )
  }
  if (url.username || url.password) throw usage(`${flag}: must not carry credentials in the URL`)
  if (url.hash) throw usage(`${flag}: must not have a fragment`)
  return url
}

/** `--remote-auth-scopes a,b --remote-auth-scopes "c d"` → [a, b, c, d]. */
export function parseScopes(value: string[] | string | undefined): string[] | undefined {
  if (value === undefined) return undefined
  const list = (Array.isArray(value) ? value : [value])
    .flatMap((v) => v.split(/[\s,]+/))
    .filter(Boolean)
  for (const s of list) {
    // RFC 6749 §3.3 scope-token: %x21 / %x23-5B / %x5D-7E
    if (!/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(s))
      throw usage(`--remote-auth-scopes: "${s}" is not a valid scope`)
  }
  return list
}

export interface SecretSources {
  env?: NodeJS.ProcessEnv
  /** Whether a terminal is attached (stdin or stderr), for the `auto` login flow. */
  tty?: boolean
  /** Reads a secret from the secrets store (`--remote-auth-client-secret-name`). */
  readSecret?: (name: string) => Promise<string>
}

/**
 * Flags → options, with every conflict a usage error naming the flags (checked before anything is
 * started). Returns undefined when `--remote-auth` is off. Client secret precedence (spec): flag,
 * then file, then TOOLGATE_REMOTE_OAUTH_CLIENT_SECRET.
 */
export async function remoteAuthOptionsFromFlags(
  flags: RemoteAuthFlags,
  targetUri: string,
  sources: SecretSources = {},
): Promise<RemoteAuthOptions | undefined> {
  const env = sources.env ?? process.env
  const set = (name: keyof RemoteAuthFlags) =>
    flags[name] !== undefined && flags[name] !== false && flags[name] !== ''
  const oauthFlags = (Object.keys(flags) as (keyof RemoteAuthFlags)[]).filter(
    (k) =>
      k.startsWith('remote-auth-') &&
      !k.startsWith('remote-auth-bearer-token') &&
      (k as string) !== 'non-interactive' &&
      set(k) &&
      // flags with defaults count only when changed from the default
      !(k === 'remote-auth-callback-port' && flags[k] === DEFAULT_CALLBACK_PORT) &&
      !(k === 'remote-auth-timeout' && flags[k] === DEFAULT_TIMEOUT),
  )
  if (!flags['remote-auth']) {
    if (oauthFlags.length > 0) throw usage(`--${oauthFlags[0]} needs --remote-auth`)
    return undefined
  }
  for (const bearer of ['remote-auth-bearer-token', 'remote-auth-bearer-token-file'] as const) {
    if (set(bearer)) throw usage(`--${bearer} and --remote-auth are alternatives; use one`)
  }

  const hasAuthorize = set('remote-auth-authorize-url')
  const hasToken = set('remote-auth-token-url')
  if (set('remote-auth-issuer') && (hasAuthorize || hasToken)) {
    throw usage(
      '--remote-auth-issuer and --remote-auth-authorize-url/--remote-auth-token-url are alternatives; use the issuer (OIDC discovery) or both URLs',
    )
  }
  if (hasAuthorize !== hasToken) {
    throw usage(
      `--${hasAuthorize ? 'remote-auth-authorize-url' : 'remote-auth-token-url'} needs --${hasAuthorize ? 'remote-auth-token-url' : 'remote-auth-authorize-url'} too`,
    )
  }
  const clientId = flags['remote-auth-client-id'] || undefined
  let clientSecret: string | undefined
  let secretFrom: string | undefined
  if (set('remote-auth-client-secret')) {
    clientSecret = flags['remote-auth-client-secret']
    secretFrom = '--remote-auth-client-secret'
  } else if (set('remote-auth-client-secret-file')) {
    const path = flags['remote-auth-client-secret-file'] as string
    clientSecret = readSecretFile(path, {what: '--remote-auth-client-secret-file'})
    secretFrom = '--remote-auth-client-secret-file'
  } else if (set('remote-auth-client-secret-name')) {
    const name = flags['remote-auth-client-secret-name'] as string
    if (!sources.readSecret)
      throw usage('--remote-auth-client-secret-name: no secrets store is available here')
    clientSecret = (await sources.readSecret(name)).trim()
    secretFrom = '--remote-auth-client-secret-name'
  } else if (clientId && env[CLIENT_SECRET_ENV]) {
    // The env variable is only used with a client id: set globally, it must not break DCR.
    clientSecret = env[CLIENT_SECRET_ENV]?.trim() || undefined
  }
  if (clientSecret !== undefined && !clientId) {
    throw usage(
      `${secretFrom} needs --remote-auth-client-id (without a client id the proxy registers a public client itself)`,
    )
  }

  // --remote-auth-skip-browser asks for the browser flow's URL on stderr: it picks that flow.
  const flow = flags['remote-auth-flow'] ?? (set('remote-auth-skip-browser') ? 'browser' : 'auto')
  if (!LOGIN_FLOWS.includes(flow as LoginFlow))
    throw usage(`--remote-auth-flow: "${flow}" must be one of ${LOGIN_FLOWS.join(', ')}`)
  if (flow === 'device' && set('remote-auth-skip-browser'))
    throw usage('--remote-auth-skip-browser applies to --remote-auth-flow browser, not device')
  const grant = flags['remote-auth-grant'] ?? 'authorization_code'
  if (!REMOTE_GRANTS.includes(grant as RemoteGrant))
    throw usage(`--remote-auth-grant: "${grant}" must be one of ${REMOTE_GRANTS.join(', ')}`)
  const keyFile = flags['remote-auth-client-key-file'] || undefined
  if (grant === 'client_credentials') {
    if (!clientId)
      throw usage(
        '--remote-auth-grant client_credentials needs --remote-auth-client-id (a registered confidential client)',
      )
    if (set('remote-auth-client-secret'))
      throw usage(
        '--remote-auth-grant client_credentials: pass the secret with --remote-auth-client-secret-file, --remote-auth-client-secret-name (secrets store) or env TOOLGATE_REMOTE_OAUTH_CLIENT_SECRET, not on the command line (CI logs and process listings show it)',
      )
    if (keyFile && clientSecret !== undefined)
      throw usage(
        '--remote-auth-client-key-file and a client secret are alternatives: private_key_jwt or client_secret_basic',
      )
    if (!keyFile && clientSecret === undefined)
      throw usage(
        '--remote-auth-grant client_credentials needs a client secret (--remote-auth-client-secret-file, --remote-auth-client-secret-name or env TOOLGATE_REMOTE_OAUTH_CLIENT_SECRET) or --remote-auth-client-key-file',
      )
    for (const f of [
      'remote-auth-flow',
      'remote-auth-skip-browser',
      'remote-auth-scope-param-name',
    ] as const)
      if (set(f))
        throw usage(
          `--${f} applies to a person's login, not to --remote-auth-grant client_credentials`,
        )
  } else if (keyFile) {
    throw usage('--remote-auth-client-key-file needs --remote-auth-grant client_credentials')
  }

  const explicit = hasAuthorize && hasToken
  if (explicit && !clientId) {
    throw usage(
      '--remote-auth-authorize-url/--remote-auth-token-url need --remote-auth-client-id: dynamic registration needs the server metadata that only --remote-auth-issuer (or detection) provides',
    )
  }

  const port = flags['remote-auth-callback-port'] ?? DEFAULT_CALLBACK_PORT
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw usage(`--remote-auth-callback-port: ${port} is not a port (0-65535)`)

  const resource = flags['remote-auth-resource'] || undefined
  if (resource !== undefined) {
    // RFC 8707 §2: an absolute URI without a fragment.
    if (!URL.canParse(resource) || new URL(resource).hash)
      throw usage(
        `--remote-auth-resource: "${resource}" must be an absolute URI without a fragment`,
      )
  }
  const scopeParamName = flags['remote-auth-scope-param-name'] || undefined
  if (scopeParamName !== undefined && !/^[A-Za-z0-9._~-]+$/.test(scopeParamName)) {
    throw usage(`--remote-auth-scope-param-name: "${scopeParamName}" is not a query parameter name`)
  }
  if (!URL.canParse(targetUri)) throw usage(`--target-uri: "${targetUri}" is not an absolute URL`)

  return {
    targetUri: new URL(targetUri),
    ...(set('remote-auth-issuer')
      ? {issuer: endpointUrl(flags['remote-auth-issuer'] as string, '--remote-auth-issuer')}
      : {}),
    ...(explicit
      ? {
          authorizeUrl: endpointUrl(
            flags['remote-auth-authorize-url'] as string,
            '--remote-auth-authorize-url',
          ),
          tokenUrl: endpointUrl(
            flags['remote-auth-token-url'] as string,
            '--remote-auth-token-url',
          ),
        }
      : {}),
    ...(clientId ? {clientId} : {}),
    ...(clientSecret !== undefined ? {clientSecret} : {}),
    callbackPort: port,
    ...(flags['remote-auth-scopes'] !== undefined
      ? {scopes: parseScopes(flags['remote-auth-scopes'])}
      : {}),
    ...(scopeParamName ? {scopeParamName} : {}),
    ...(resource ? {resource} : {}),
    skipBrowser: flags['remote-auth-skip-browser'] === true,
    flow: flow as LoginFlow,
    grant: grant as RemoteGrant,
    ...(keyFile ? {clientKeyFile: keyFile} : {}),
    session: detectLoginSession(env, flags, sources.tty ?? false),
    timeoutMs: parseDuration(
      flags['remote-auth-timeout'] ?? DEFAULT_TIMEOUT,
      '--remote-auth-timeout',
    ),
  }
}
