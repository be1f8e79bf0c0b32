import {ToolgateError} from '../errors.ts'
import {readSecretFile} from '../fs/secret-file.ts'
import {isLoopbackHost} from '../http/loopback.ts'
import type {Logger} from '../log/logger.ts'
import {createTokenExchanger} from '../token-exchange/exchanger.ts'
import type {SubjectTokenType, TokenExchangeConfig} from '../token-exchange/request.ts'
import {assertInjectableName, parseForwardHeaders} from './forward-headers.ts'
import {incomingAuthEnabled, type IncomingOidcOptions} from './incoming-auth.ts'
import {parseAllowedOrigins} from './origin.ts'
import {staticTokenSource} from './outgoing-auth.ts'
import type {ProxyConfig} from './proxy-server.ts'

/**
 * The flags of `toolgate proxy` this module maps (spec table; contract §3). Other domains add their
 * own flags (authz, secrets, remote OAuth) and extend the returned config.
 */
export interface ProxyFlags {
  'target-uri': string
  host: string
  port?: number
  'allowed-origins'?: string[]
  'max-request-body-size': number
  'max-connections'?: number
  'require-auth'?: boolean
  'remote-forward-incoming-token'?: boolean
  'resource-url'?: string
  'oidc-issuer'?: string
  'oidc-audience'?: string
  'oidc-client-id'?: string
  'oidc-client-secret'?: string
  'oidc-introspection-url'?: string
  'oidc-jwks-url'?: string
  'oidc-scopes'?: string[]
  'remote-auth-bearer-token'?: string
  'remote-auth-bearer-token-file'?: string
  'remote-forward-headers'?: string[]
  'token-exchange-url'?: string
  'token-exchange-audience'?: string
  'token-exchange-client-id'?: string
  'token-exchange-client-secret'?: string
  'token-exchange-client-secret-file'?: string
  'token-exchange-header-name'?: string
  'token-exchange-scopes'?: string[]
  'token-exchange-subject-token-type'?: string
}

export interface ProxyOptionDeps {
  logger: Logger
  env?: NodeJS.ProcessEnv
  /** Secret-file reader; default the shared one (src/lib/fs/secret-file.ts), injectable for tests. */
  readSecretFile?: (path: string, flag: string) => string
}

export const BEARER_TOKEN_ENV = 'TOOLGATE_REMOTE_AUTH_BEARER_TOKEN'

function url(text: string, flag: string, schemes = ['http:', 'https:']): URL {
  let u: URL
  try {
    u = new URL(text)
  } catch {
    throw new ToolgateError('ERR_USAGE', `${flag}: "${text}" is not an absolute URL`)
  }
  if (!schemes.includes(u.protocol))
    throw new ToolgateError('ERR_USAGE', `${flag}: scheme must be ${schemes.join(' or ')}`)
  if (u.username || u.password)
    throw new ToolgateError('ERR_USAGE', `${flag}: credentials in the URL are not allowed`)
  return u
}

/** "list of string" flags accept repetition and comma-separated values alike. */
function list(values: string[] | undefined): string[] {
  return (values ?? [])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean)
}

function exclusive(flags: ProxyFlags, a: keyof ProxyFlags, b: keyof ProxyFlags): void {
  if (flags[a] !== undefined && flags[b] !== undefined) {
    throw new ToolgateError('ERR_USAGE', `--${a} and --${b} cannot be used together`)
  }
}

function subjectType(text: string | undefined): SubjectTokenType {
  if (
    text === undefined ||
    text === 'access_token' ||
    text === 'urn:ietf:params:oauth:token-type:access_token'
  )
    return 'access_token'
  if (text === 'id_token' || text === 'urn:ietf:params:oauth:token-type:id_token') return 'id_token'
  throw new ToolgateError(
    'ERR_USAGE',
    `--token-exchange-subject-token-type: "${text}" must be access_token or id_token`,
  )
}

/**
 * Validates the flags and builds the proxy configuration; every mistake is found here, before the
 * proxy listens (bad input fails at startup naming the flag, never on the first request).
 */
export function proxyConfigFromFlags(
  name: string,
  flags: ProxyFlags,
  deps: ProxyOptionDeps,
): ProxyConfig {
  const env = deps.env ?? process.env
  const read = deps.readSecretFile ?? ((p: string, flag: string) => readSecretFile(p, {what: flag}))
  if (!name.trim()) throw new ToolgateError('ERR_USAGE', 'SERVER_NAME must not be empty')
  const targetUri = url(flags['target-uri'], '--target-uri')
  const port = flags.port ?? 0
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new ToolgateError('ERR_USAGE', `--port: ${port} is not a port number`)
  const max = flags['max-request-body-size']
  if (!Number.isSafeInteger(max) || max < 0)
    throw new ToolgateError(
      'ERR_USAGE',
      `--max-request-body-size: must be a non-negative number of bytes`,
    )
  if (!flags.host.trim()) throw new ToolgateError('ERR_USAGE', '--host must not be empty')

  const origins = list(flags['allowed-origins'])
  // Kept as typed: clients compare `resource` with the URL they used (RFC 9728 §3.3).
  const resourceUrl = flags['resource-url']
  if (resourceUrl) url(resourceUrl, '--resource-url')

  const scopes = list(flags['oidc-scopes'])
  const oidc: IncomingOidcOptions = {scopes: scopes.length ? scopes : ['openid']}
  // Kept as typed: `iss` must equal it byte for byte (spec "Token handling" 5).
  if (flags['oidc-issuer'])
    oidc.issuer = url(flags['oidc-issuer'], '--oidc-issuer') && flags['oidc-issuer']
  if (flags['oidc-audience']) oidc.audience = flags['oidc-audience']
  if (flags['oidc-jwks-url']) oidc.jwksUrl = url(flags['oidc-jwks-url'], '--oidc-jwks-url').href
  if (flags['oidc-introspection-url'])
    oidc.introspectionUrl = url(flags['oidc-introspection-url'], '--oidc-introspection-url').href
  if (flags['oidc-client-id']) oidc.clientId = flags['oidc-client-id']
  if (flags['oidc-client-secret']) oidc.clientSecret = flags['oidc-client-secret']
  // Keys or an introspection endpoint alone do not say whose tokens are meant: without an issuer
  // `iss` is not checked, and without an audience any token the same keys signed is accepted —
  // on a multi-tenant IdP, other tenants' tokens too. One of the two must pin it (deny when unsure).
  if ((oidc.jwksUrl || oidc.introspectionUrl) && !oidc.issuer && !oidc.audience) {
    const which = oidc.jwksUrl ? '--oidc-jwks-url' : '--oidc-introspection-url'
    throw new ToolgateError(
      'ERR_USAGE',
      `${which}: also set --oidc-issuer or --oidc-audience (or both), or any token signed or known by that provider would be accepted`,
    )
  }

  // Outgoing bearer: flag → file → env (contract §3).
  exclusive(flags, 'remote-auth-bearer-token', 'remote-auth-bearer-token-file')
  let bearer = flags['remote-auth-bearer-token']
  if (bearer !== undefined && !bearer.trim())
    throw new ToolgateError('ERR_USAGE', '--remote-auth-bearer-token must not be empty')
  if (bearer === undefined && flags['remote-auth-bearer-token-file']) {
    bearer = read(flags['remote-auth-bearer-token-file'], '--remote-auth-bearer-token-file')
  }
  if (bearer === undefined && env[BEARER_TOKEN_ENV]?.trim()) bearer = env[BEARER_TOKEN_ENV].trim()
  // eslint-disable-next-line no-control-regex -- a token with controls would split the header
  if (bearer !== undefined && /[\u0000-\u001f\u007f\s]/.test(bearer.trim())) {
    throw new ToolgateError(
      'ERR_USAGE',
      'the remote bearer token contains whitespace or control characters',
    )
  }

  let tokenExchange: TokenExchangeConfig | undefined
  exclusive(flags, 'token-exchange-client-secret', 'token-exchange-client-secret-file')
  if (flags['token-exchange-url']) {
    const u = url(flags['token-exchange-url'], '--token-exchange-url')
    // The exchange sends credentials: plain http only to this machine.
    if (u.protocol === 'http:' && !isLoopbackHost(u.hostname)) {
      throw new ToolgateError(
        'ERR_USAGE',
        '--token-exchange-url: must be https unless the host is a loopback address',
      )
    }
    let secret = flags['token-exchange-client-secret']
    if (secret === undefined && flags['token-exchange-client-secret-file']) {
      secret = read(
        flags['token-exchange-client-secret-file'],
        '--token-exchange-client-secret-file',
      )
    }
    if (secret !== undefined && !flags['token-exchange-client-id']) {
      throw new ToolgateError(
        'ERR_USAGE',
        '--token-exchange-client-secret needs --token-exchange-client-id',
      )
    }
    const headerName = flags['token-exchange-header-name']
      ? assertInjectableName(flags['token-exchange-header-name'], '--token-exchange-header-name')
      : undefined
    const exScopes = list(flags['token-exchange-scopes'])
    tokenExchange = {
      url: u.href,
      subjectTokenType: subjectType(flags['token-exchange-subject-token-type']),
      timeoutMs: 10_000,
      ...(flags['token-exchange-client-id'] ? {clientId: flags['token-exchange-client-id']} : {}),
      ...(secret ? {clientSecret: secret} : {}),
      ...(flags['token-exchange-audience'] ? {audience: flags['token-exchange-audience']} : {}),
      ...(exScopes.length ? {scopes: exScopes} : {}),
      ...(headerName ? {headerName} : {}),
    }
  } else {
    for (const f of [
      'audience',
      'client-id',
      'client-secret',
      'client-secret-file',
      'header-name',
      'scopes',
      'subject-token-type',
    ] as const) {
      if (flags[`token-exchange-${f}`] !== undefined) {
        throw new ToolgateError('ERR_USAGE', `--token-exchange-${f} needs --token-exchange-url`)
      }
    }
  }

  const maxConnections = flags['max-connections']
  if (maxConnections !== undefined && (!Number.isSafeInteger(maxConnections) || maxConnections < 1))
    throw new ToolgateError('ERR_USAGE', '--max-connections: must be a positive number')
  if (flags['require-auth'] && !incomingAuthEnabled(oidc)) {
    throw new ToolgateError(
      'ERR_USAGE',
      '--require-auth: no incoming authentication is configured; add --oidc-issuer (or --oidc-jwks-url, or --oidc-introspection-url)',
    )
  }
  const forwardIncomingToken = flags['remote-forward-incoming-token'] === true
  if (forwardIncomingToken) {
    if (bearer !== undefined || tokenExchange)
      throw new ToolgateError(
        'ERR_USAGE',
        '--remote-forward-incoming-token: an outgoing credential (bearer token or token exchange) already replaces the client token',
      )
    deps.logger.warn(
      "--remote-forward-incoming-token: clients' tokens are passed to the target as they are (token passthrough); the target can replay them wherever they are accepted",
    )
  }

  return {
    name,
    targetUri,
    ...(maxConnections !== undefined ? {maxConnections} : {}),
    ...(forwardIncomingToken ? {forwardIncomingToken} : {}),
    host: flags.host,
    port,
    ...(origins.length ? {allowedOrigins: parseAllowedOrigins(origins)} : {}),
    maxRequestBodySize: max,
    ...(resourceUrl ? {resourceUrl} : {}),
    oidc,
    ...(bearer !== undefined ? {upstreamToken: staticTokenSource(bearer)} : {}),
    ...(tokenExchange
      ? {tokenExchange: createTokenExchanger(tokenExchange, {logger: deps.logger})}
      : {}),
    forwardHeaders: parseForwardHeaders(flags['remote-forward-headers'] ?? []),
  }
}
