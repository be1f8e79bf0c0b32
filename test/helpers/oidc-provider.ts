import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import {createServer as createHttpsServer} from 'node:https'
import type {AddressInfo} from 'node:net'
import {randomUUID} from 'node:crypto'
import {exportJWK, generateKeyPair, SignJWT, type JWK} from 'jose'
import Provider, {type Configuration} from 'oidc-provider'
import type {ProviderConfig} from '../../src/lib/auth/types.ts'

/**
 * A real OpenID provider (npm `oidc-provider`) on 127.0.0.1 for tests. Two calls give two
 * independent providers (multi-IdP). Built in and enabled: discovery, JWKS, client_credentials,
 * introspection (`/token/introspection`), revocation, dynamic registration, refresh tokens,
 * resource indicators, PKCE and the dev login/consent pages.
 *
 * Access-token format (testing.md): a `resource` (RFC 8707) gives a JWT whose `aud` is that
 * resource; the resource `urn:toolgate:opaque` gives an opaque token whose audience is
 * `options.audience` (introspect it). Without a resource, client_credentials uses `options.audience`
 * and gets a JWT.
 *
 * The provider signs with keys this fixture generates, so a test can also sign arbitrary
 * (hostile) tokens with the provider's real key via `signJwt`, and rotate keys while running.
 */
export interface OidcProviderOptions {
  /** Listen port; 0 (default) picks a free one. */
  port?: number
  /** Default audience / resource indicator, default `api://toolgate`. */
  audience?: string
  /** Extra static clients (merged after the default confidential client). */
  clients?: Configuration['clients']
  /** Claims added to every access token (JWT payload and introspection response). */
  extraTokenClaims?: Record<string, unknown>
  /** Signing algorithm of the generated key, default RS256. */
  alg?: 'RS256' | 'PS256' | 'ES256' | 'EdDSA'
  /** Last chance to change the configuration before the provider is built. */
  configure?: (config: Configuration) => void
  /** Serve HTTPS with this certificate (issuer `https://…`). */
  tls?: {cert: string; key: string}
  /** The issuer's host name (default 127.0.0.1); it still listens on 127.0.0.1. */
  hostname?: string
  /** Called with each provider instance built (also after rotateKeys), e.g. to registerGrantType. */
  setup?: (provider: Provider) => void | Promise<void>
}

export interface IssueOptions {
  /** Subject (account id), default `alice`. */
  sub?: string
  /** `aud` of the token; default options.audience. */
  audience?: string
  format?: 'jwt' | 'opaque'
  scope?: string
  /** Seconds, default 3600. */
  expiresIn?: number
  claims?: Record<string, unknown>
  clientId?: string
}

export interface OidcProviderFixture {
  /** `http://127.0.0.1:<port>` (no trailing slash); equals the `iss` of its tokens. */
  readonly issuer: string
  readonly port: number
  readonly audience: string
  /** The current oidc-provider instance (replaced by rotateKeys). */
  readonly provider: Provider
  readonly discoveryUrl: string
  readonly jwksUrl: string
  readonly tokenUrl: string
  readonly introspectionUrl: string
  /** Confidential client (client_secret_basic) allowed client_credentials and introspection. */
  readonly client: {clientId: string; clientSecret: string}
  /** Current signing key (private JWK with `kid` and `alg`). */
  readonly signingKey: JWK
  /** Mints an access token through the provider's own token model (real format code). */
  issueAccessToken(opts?: IssueOptions): Promise<string>
  /** Runs a real client_credentials grant over HTTP; returns the access_token. */
  clientCredentialsToken(opts?: {resource?: string; scope?: string}): Promise<string>
  /** Signs any payload with the provider's current key (or a given header), for hostile cases. */
  signJwt(payload: Record<string, unknown>, header?: Record<string, unknown>): Promise<string>
  /** Replaces the signing key with a fresh one (new kid); keepOld also publishes the old key. */
  rotateKeys(opts?: {keepOld?: boolean}): Promise<void>
  /** Stops answering (connections closed, port released) to simulate an outage. */
  stop(): Promise<void>
  /** Listens again on the same port after stop(). */
  start(): Promise<void>
  /** Requests seen, newest last (method, path, authorization header presence). */
  readonly requests: Array<{method: string; path: string; authorization: string | undefined}>
  close(): Promise<void>
}

export const OPAQUE_RESOURCE = 'urn:toolgate:opaque'

async function newKey(alg: NonNullable<OidcProviderOptions['alg']>): Promise<JWK> {
  const {privateKey} = await generateKeyPair(alg, {extractable: true})
  const jwk = await exportJWK(privateKey)
  return {...jwk, kid: randomUUID(), alg, use: 'sig'}
}

export async function startOidcProvider(
  options: OidcProviderOptions = {},
): Promise<OidcProviderFixture> {
  const audience = options.audience ?? 'api://toolgate'
  const alg = options.alg ?? 'RS256'
  const client = {
    clientId: `client-${randomUUID().slice(0, 8)}`,
    clientSecret: randomUUID() + randomUUID(),
  }
  let keys: JWK[] = [await newKey(alg)]
  let provider: Provider | undefined
  const requests: OidcProviderFixture['requests'] = []
  const claimsByToken = new WeakMap<object, Record<string, unknown>>()

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    requests.push({
      method: req.method ?? '',
      path: req.url ?? '',
      authorization: req.headers.authorization,
    })
    if (!provider) {
      res.writeHead(503).end()
      return
    }
    provider.callback()(req, res)
  }
  const server: Server = options.tls
    ? (createHttpsServer(options.tls, handler) as unknown as Server)
    : createServer(handler)
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, '127.0.0.1', () =>
      resolve((server.address() as AddressInfo).port),
    )
  })
  const issuer = `${options.tls ? 'https' : 'http'}://${options.hostname ?? '127.0.0.1'}:${port}`

  const build = async () => {
    const config: Configuration = {
      clients: [
        {
          client_id: client.clientId,
          client_secret: client.clientSecret,
          grant_types: ['client_credentials', 'authorization_code', 'refresh_token'],
          response_types: ['code'],
          redirect_uris: ['http://127.0.0.1/callback'],
          token_endpoint_auth_method: 'client_secret_basic',
        },
        ...(options.clients ?? []),
      ],
      jwks: {keys: keys as never},
      findAccount: async (_ctx: unknown, sub: string) => ({
        accountId: sub,
        claims: async () => ({sub, email: `${sub}@example.test`}),
      }),
      features: {
        devInteractions: {enabled: true},
        clientCredentials: {enabled: true},
        introspection: {enabled: true, allowedPolicy: async () => true},
        revocation: {enabled: true},
        registration: {enabled: true},
        resourceIndicators: {
          enabled: true,
          defaultResource: async (_ctx: unknown, _client: unknown, oneOf?: string) =>
            oneOf ?? audience,
          useGrantedResource: async () => true,
          getResourceServerInfo: async (_ctx: unknown, resource: string) =>
            resource === OPAQUE_RESOURCE
              ? {audience, accessTokenFormat: 'opaque', scope: 'openid profile read write'}
              : {
                  audience: resource,
                  accessTokenFormat: 'jwt',
                  scope: 'openid profile read write',
                  jwt: {sign: {alg}},
                },
        },
      },
      // oidc-provider replaces a token's `extra` with this function's result, so per-token claims
      // given to issueAccessToken are looked up here by token and merged over the fixed ones.
      extraTokenClaims: async (_ctx: unknown, token: object) => {
        const perToken = claimsByToken.get(token)
        return options.extraTokenClaims || perToken
          ? {...options.extraTokenClaims, ...perToken}
          : undefined
      },
      pkce: {required: () => true},
      ttl: {AccessToken: 3600, ClientCredentials: 3600},
      scopes: ['openid', 'profile', 'email', 'offline_access', 'read', 'write'],
    }
    options.configure?.(config)
    const p = new Provider(issuer, config)
    await options.setup?.(p)
    provider = p
  }
  await build()

  const current = () => provider as Provider
  const fixture: OidcProviderFixture = {
    issuer,
    port,
    audience,
    get provider() {
      return current()
    },
    discoveryUrl: `${issuer}/.well-known/openid-configuration`,
    jwksUrl: `${issuer}/jwks`,
    tokenUrl: `${issuer}/token`,
    introspectionUrl: `${issuer}/token/introspection`,
    client,
    get signingKey() {
      return keys[0] as JWK
    },
    requests,
    async issueAccessToken(opts: IssueOptions = {}) {
      const p = current()
      const c = await p.Client.find(opts.clientId ?? client.clientId)
      if (!c) throw new Error('unknown client')
      const aud = opts.audience ?? audience
      const format = opts.format ?? 'jwt'
      const resourceServer = new p.ResourceServer(format === 'jwt' ? aud : OPAQUE_RESOURCE, {
        audience: aud,
        accessTokenFormat: format,
        scope: opts.scope ?? 'openid read',
        ...(format === 'jwt' ? {jwt: {sign: {alg}}} : {}),
      })
      // A real Grant, because introspection answers inactive for a token whose grant is gone.
      const grant = new p.Grant({accountId: opts.sub ?? 'alice', clientId: c.clientId})
      grant.addOIDCScope('openid')
      grant.addResourceScope(resourceServer.identifier(), opts.scope ?? 'openid read')
      const grantId = await grant.save()
      const token = new p.AccessToken({
        accountId: opts.sub ?? 'alice',
        client: c,
        grantId,
        scope: opts.scope ?? 'openid read',
        expiresIn: opts.expiresIn ?? 3600,
        resourceServer,
      } as never)
      if (opts.claims) claimsByToken.set(token as object, opts.claims)
      return await token.save()
    },
    async clientCredentialsToken(opts = {}) {
      const body = new URLSearchParams({grant_type: 'client_credentials'})
      if (opts.resource) body.set('resource', opts.resource)
      if (opts.scope) body.set('scope', opts.scope)
      const res = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          authorization:
            'Basic ' +
            Buffer.from(
              `${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`,
            ).toString('base64'),
          'content-type': 'application/x-www-form-urlencoded',
        },
        body,
      })
      const json = (await res.json()) as {access_token?: string; error?: string}
      if (!res.ok || !json.access_token)
        throw new Error(`client_credentials failed: ${res.status} ${json.error ?? ''}`)
      return json.access_token
    },
    async signJwt(payload, header = {}) {
      const key = keys[0] as JWK
      const {importJWK} = await import('jose')
      const k = await importJWK(key, key.alg)
      return new SignJWT(payload)
        .setProtectedHeader({alg: key.alg as string, kid: key.kid, typ: 'at+jwt', ...header})
        .sign(k)
    },
    async rotateKeys(opts = {}) {
      const fresh = await newKey(alg)
      keys = opts.keepOld ? [fresh, ...keys] : [fresh]
      await build()
    },
    async stop() {
      if (!server.listening) return
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      server.closeAllConnections()
      await closed
    },
    async start() {
      if (server.listening) return
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen(port, '127.0.0.1', () => {
          server.off('error', reject)
          resolve()
        })
      })
    },
    async close() {
      await fixture.stop()
    },
  }
  return fixture
}

/**
 * A toolgate provider entry for a fixture: discovery through the issuer, its default audience,
 * `allowPrivateIP: true` because the fixture is on loopback. Override anything.
 */
export function providerConfigOf(
  fx: OidcProviderFixture,
  overrides: Partial<ProviderConfig> = {},
): ProviderConfig {
  return {
    name: `op-${fx.port}`,
    issuerUrl: fx.issuer,
    audience: fx.audience,
    allowPrivateIP: true,
    ...overrides,
  }
}
