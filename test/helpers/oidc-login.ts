import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'
import {createRemoteJWKSet, jwtVerify} from 'jose'
import {
  startOidcProvider,
  type OidcProviderFixture,
  type OidcProviderOptions,
} from './oidc-provider.ts'

/**
 * Remote-login test helpers: a real oidc-provider set up the way the remote OAuth flow needs it
 * (dynamic registration with RFC 7592 management, PKCE, refresh tokens for every code grant,
 * short-lived access tokens), a driver that walks its real login and consent pages with fetch and
 * a cookie jar, and a protected resource that checks the tokens the proxy sends.
 */

export interface LoginProviderOptions extends OidcProviderOptions {
  /** Access-token lifetime in seconds (default 2, so tests cross several expiries). */
  accessTokenTtl?: number
  /** Offer RFC 7591 registration (default true). */
  registration?: boolean
}

export async function startLoginProvider(
  options: LoginProviderOptions = {},
): Promise<OidcProviderFixture & {tokenRequests: () => Array<{grant: string}>}> {
  const grants: Array<{grant: string}> = []
  const fixture = await startOidcProvider({
    ...options,
    configure: (config) => {
      config.ttl = {...config.ttl, AccessToken: options.accessTokenTtl ?? 2, RefreshToken: 3600}
      // Refresh tokens for every code grant of a client allowed them (the default wants offline_access).
      config.issueRefreshToken = async (
        _ctx: unknown,
        client: {grantTypeAllowed(g: string): boolean},
      ) => client.grantTypeAllowed('refresh_token')
      config.features.registration = {enabled: options.registration !== false}
      config.features.registrationManagement = {
        enabled: options.registration !== false,
        rotateRegistrationAccessToken: false,
      }
      options.configure?.(config)
    },
    setup: async (provider) => {
      provider.on('grant.success', (ctx: {oidc: {params: {grant_type: string}}}) => {
        grants.push({grant: ctx.oidc.params.grant_type})
      })
      await options.setup?.(provider)
    },
  })
  return Object.assign(fixture, {tokenRequests: () => grants})
}

/** A cookie jar that honours Path and expiry, enough for oidc-provider's interaction cookies. */
class CookieJar {
  readonly #cookies = new Map<string, {value: string; path: string}>()
  store(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';')
      const eq = (pair as string).indexOf('=')
      const name = (pair as string).slice(0, eq).trim()
      const value = (pair as string).slice(eq + 1).trim()
      let path = '/'
      let expired = false
      for (const a of attrs) {
        const [k, v = ''] = a.trim().split('=')
        if (k?.toLowerCase() === 'path') path = v
        if (k?.toLowerCase() === 'expires' && Date.parse(v) < Date.now()) expired = true
        if (k?.toLowerCase() === 'max-age' && Number(v) <= 0) expired = true
      }
      const key = `${name}\n${path}`
      if (expired) this.#cookies.delete(key)
      else this.#cookies.set(key, {value, path})
    }
  }
  header(url: URL): string {
    return [...this.#cookies.entries()]
      .filter(
        ([, c]) =>
          url.pathname === c.path ||
          url.pathname.startsWith(c.path.endsWith('/') ? c.path : c.path + '/'),
      )
      .map(([key, c]) => `${key.split('\n')[0]}=${c.value}`)
      .join('; ')
  }
}

export interface DriveLoginOptions {
  /** Account to log in as (the dev login accepts any name). */
  login?: string
  /** Press the "Cancel" link instead of logging in: the provider redirects with access_denied. */
  abort?: boolean
}

export interface DriveLoginResult {
  /** The redirect to the callback, as the provider sent it. */
  callbackUrl: URL
  /** What the proxy's callback page answered. */
  status: number
  page: string
}

/**
 * Acts as the user's browser: follows the authorization URL through oidc-provider's real login and
 * consent pages (forms posted as a browser would) to the redirect back to the callback server.
 */
export async function driveLogin(
  authorizationUrl: string,
  options: DriveLoginOptions = {},
): Promise<DriveLoginResult> {
  const jar = new CookieJar()
  const start = new URL(authorizationUrl)
  const redirectUri = new URL(start.searchParams.get('redirect_uri') as string)
  let url = start
  let init: {method: string; body?: URLSearchParams} = {method: 'GET'}
  for (let step = 0; step < 20; step++) {
    const response = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: {
        cookie: jar.header(url),
        ...(init.body ? {'content-type': 'application/x-www-form-urlencoded'} : {}),
      },
      signal: AbortSignal.timeout(10_000),
    })
    jar.store(response)
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel()
      const next = new URL(response.headers.get('location') as string, url)
      if (next.origin === redirectUri.origin && next.pathname === redirectUri.pathname) {
        const cb = await fetch(next, {signal: AbortSignal.timeout(15_000)})
        return {callbackUrl: next, status: cb.status, page: await cb.text()}
      }
      url = next
      init = {method: 'GET'}
      continue
    }
    const html = await response.text()
    if (response.status !== 200)
      throw new Error(
        `login page ${url.pathname} answered ${response.status}: ${html.slice(0, 300)}`,
      )
    if (options.abort) {
      const abort = /href="([^"]*\/abort)"/.exec(html)?.[1]
      if (!abort) throw new Error('no abort link on the login page')
      url = new URL(abort.replace(/&amp;/g, '&'), url)
      init = {method: 'GET'}
      continue
    }
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1]
    if (!action) throw new Error(`no form on ${url.pathname}: ${html.slice(0, 300)}`)
    const body = new URLSearchParams()
    for (const m of html.matchAll(
      /<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"/g,
    ))
      body.set(m[1] as string, m[2] as string)
    if (/name="login"/.test(html)) {
      body.set('login', options.login ?? 'alice')
      body.set('password', 'any-password')
    }
    url = new URL(action.replace(/&amp;/g, '&'), url)
    init = {method: 'POST', body}
  }
  throw new Error('login did not reach the callback within 20 steps')
}

/**
 * The person at another machine: opens the verification URI in a "browser" (fetch with a cookie
 * header kept by hand) and walks oidc-provider's real device pages — the auto-submitted form, the
 * confirmation page, login and consent — until the success page (or presses abort).
 */
export async function approveDeviceLogin(
  verificationUri: string,
  action: 'approve' | 'abort' = 'approve',
  login = 'dora',
): Promise<'approved' | 'aborted'> {
  const cookies = new Map<string, string>()
  let url = new URL(verificationUri)
  let init: {method: string; body?: URLSearchParams} = {method: 'GET'}
  for (let step = 0; step < 20; step++) {
    const res = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: {
        cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(init.body ? {'content-type': 'application/x-www-form-urlencoded'} : {}),
      },
      signal: AbortSignal.timeout(10_000),
    })
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';')
      const eq = pair!.indexOf('=')
      cookies.set(pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim())
    }
    if (res.status >= 300 && res.status < 400) {
      await res.body?.cancel()
      url = new URL(res.headers.get('location')!, url)
      init = {method: 'GET'}
      continue
    }
    const html = await res.text()
    if (/Sign-in Success/.test(html)) return 'approved'
    if (/aborted|interrupted/i.test(html) && action === 'abort') return 'aborted'
    const form = /<form[^>]*action="([^"]+)"/.exec(html)?.[1]
    if (!form) throw new Error(`no form on ${url.pathname} (${res.status}): ${html.slice(0, 200)}`)
    const body = new URLSearchParams()
    for (const m of html.matchAll(/<input[^>]*>/g)) {
      const name = /name="([^"]+)"/.exec(m[0])?.[1]
      const value = /value="([^"]*)"/.exec(m[0])?.[1] ?? ''
      if (name && /type="hidden"/.test(m[0])) body.set(name, value)
    }
    if (/name="login"/.test(html)) {
      body.set('login', login)
      body.set('password', 'any-password')
    }
    if (action === 'abort' && body.has('confirm')) {
      body.delete('confirm')
      body.set('abort', 'yes')
    }
    url = new URL(form.replace(/&amp;/g, '&'), url)
    init = {method: 'POST', body}
  }
  throw new Error('device approval did not finish within 20 steps')
}

export interface ProtectedResource {
  url: string
  /** Requests seen: whether the token was accepted. */
  readonly calls: Array<{ok: boolean; reason?: string}>
  close(): Promise<void>
}

/**
 * A protected resource (the remote MCP server's stand-in for the OAuth side): accepts only
 * unexpired JWTs of the issuer for `audience`, answers 401 with an RFC 9728 challenge otherwise,
 * and publishes /.well-known/oauth-protected-resource naming the issuer.
 */
export async function startProtectedResource(
  issuer: string,
  audience: string,
  options: {advertise?: 'resource_metadata' | 'realm' | 'none'} = {},
): Promise<ProtectedResource> {
  const jwks = createRemoteJWKSet(new URL(`${issuer}/jwks`))
  const calls: ProtectedResource['calls'] = []
  let base = ''
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      if (
        req.url === '/.well-known/oauth-protected-resource' ||
        req.url === '/.well-known/oauth-protected-resource/mcp'
      ) {
        res.writeHead(200, {'content-type': 'application/json'})
        res.end(
          JSON.stringify({
            resource: audience,
            authorization_servers: [issuer],
            bearer_methods_supported: ['header'],
          }),
        )
        return
      }
      const auth = req.headers.authorization
      let reason: string | undefined
      if (!auth?.startsWith('Bearer ')) reason = 'no bearer token'
      else {
        try {
          await jwtVerify(auth.slice(7), jwks, {issuer, audience, clockTolerance: 0})
        } catch (err) {
          reason = (err as Error).message
        }
      }
      calls.push({ok: reason === undefined, ...(reason ? {reason} : {})})
      if (reason) {
        const advertise = options.advertise ?? 'resource_metadata'
        const challenge =
          advertise === 'resource_metadata'
            ? `Bearer error="invalid_token", resource_metadata="${base}/.well-known/oauth-protected-resource"`
            : advertise === 'realm'
              ? `Bearer realm="${issuer}"`
              : 'Bearer'
        res.writeHead(401, {'www-authenticate': challenge, 'content-type': 'application/json'})
        res.end(JSON.stringify({error: 'invalid_token'}))
        return
      }
      res.writeHead(200, {'content-type': 'application/json'})
      res.end(JSON.stringify({ok: true, path: req.url}))
    })()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url: `${base}/mcp`,
    calls,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
    },
  }
}

/** A free loopback port (bound and released), for callback ports in tests; never 8666. */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  const port = (server.address() as AddressInfo).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** Progress events recorded by a test, plus a "user" who logs in whenever a login URL shows up. */
export interface RecordingUser {
  events: Array<{event: string} & Record<string, unknown>>
  sink: (e: {event: string} & object) => void
  /** Each login the user performed (resolves when the callback page answered). */
  logins: Array<Promise<DriveLoginResult>>
}

export function recordingUser(options: DriveLoginOptions & {act?: boolean} = {}): RecordingUser {
  const user: RecordingUser = {
    events: [],
    logins: [],
    sink: (e) => {
      user.events.push(e as RecordingUser['events'][number])
      const url = (e as {url?: string}).url
      if (
        options.act !== false &&
        url &&
        (e.event === 'login_url' || e.event === 'browser_opening')
      ) {
        const done = driveLogin(url, options)
        done.catch(() => {})
        user.logins.push(done)
      }
    },
  }
  return user
}
