import type {OAuthConfig, ProviderConfig} from '../auth/types.ts'
import {Checker, join, type Obj} from './checker.ts'
import {checkReadableFile, checkSecretFile, checkUrl} from './config-fields.ts'

/**
 * The `auth` section (spec "auth section", "oauth object", "provider object"). Secure by default:
 * absent `auth` or `auth.mode` is oauth, and oauth needs a resourceUrl and at least one provider.
 */
export type AuthMode = 'oauth' | 'anonymous'
export type AuthConfig = {mode: 'anonymous'} | {mode: 'oauth'; oauth: OAuthConfig}
export const DEFAULT_REALM = 'mcp-registry'

export function checkAuth(
  c: Checker,
  value: unknown,
  baseDir: string,
  override: AuthMode | undefined,
): AuthConfig {
  const o: Obj =
    value === undefined || value === null
      ? {}
      : (c.object(value, 'auth', ['mode', 'oauth', 'authz']) ?? {})
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
    else if (/^\/+$/.test(pp))
      c.add(
        `auth.oauth.publicPaths[${i}]`,
        `"${pp}" would make every route public; use auth.mode: anonymous to turn authentication off`,
      )
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
  if (clientSecretFile) checkSecretFile(c, clientSecretFile, join(p, 'clientSecretFile'), owner)
  if (authTokenFile) checkSecretFile(c, authTokenFile, join(p, 'authTokenFile'), owner)
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
