import assert from 'node:assert/strict'
import {after, before, describe, it} from 'node:test'
import {resolveServer} from '../../../src/lib/oauth/discovery.ts'
import {deviceLogin} from '../../../src/lib/oauth/device-login.ts'
import {registerClient, type ClientRecord} from '../../../src/lib/oauth/client.ts'
import {createOAuthHttp, type OAuthHttp} from '../../../src/lib/oauth/oauth-http.ts'
import type {RemoteAuthEvent} from '../../../src/lib/oauth/progress.ts'
import {approveDeviceLogin as approve, startLoginProvider} from '../../helpers/oidc-login.ts'

const AUDIENCE = 'https://mcp.example.test/mcp'
const DEVICE_CLIENT: ClientRecord = {
  client_id: 'device-cli',
  token_endpoint_auth_method: 'none',
  dynamic: false,
}

describe('device authorization grant (RFC 8628) against a real oidc-provider', () => {
  let idp: Awaited<ReturnType<typeof startLoginProvider>>
  let http: OAuthHttp
  const startDeviceProvider = (deviceCodeTtl?: number) =>
    startLoginProvider({
      // oidc-provider defines RFC 8628's slow_down error but never sends it: this middleware on the
      // real provider answers slow_down to a client that polls again within a second.
      setup: (provider) => {
        const lastPoll = new Map<string, number>()
        provider.use(async (ctx: {body: unknown}, next: () => Promise<void>) => {
          await next()
          const params = (ctx as {oidc?: {params?: Record<string, unknown>}}).oidc?.params
          const code = params?.device_code
          const body = ctx.body as {error?: string} | undefined
          if (typeof code !== 'string' || body?.error !== 'authorization_pending') return
          const last = lastPoll.get(code) ?? 0
          lastPoll.set(code, Date.now())
          if (Date.now() - last < 1000) {
            ctx.body = {error: 'slow_down', error_description: 'polling too fast'}
          }
        })
      },
      audience: AUDIENCE,
      accessTokenTtl: 60,
      clients: [
        {
          client_id: DEVICE_CLIENT.client_id,
          token_endpoint_auth_method: 'none',
          grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
          response_types: [],
          redirect_uris: [],
        },
      ],
      configure: (config) => {
        config.features!.deviceFlow = {enabled: true}
        if (deviceCodeTtl) config.ttl = {...config.ttl, DeviceCode: deviceCodeTtl}
      },
    })
  before(async () => {
    idp = await startDeviceProvider()
    http = createOAuthHttp({allowPrivateLearned: true})
  })
  after(async () => {
    await http.close()
    await idp.close()
  })

  async function server(issuer = idp.issuer) {
    return resolveServer({targetUri: new URL(AUDIENCE), issuer: new URL(issuer)}, http)
  }

  /** Runs a device login; the "person" approves from the event's complete URI. */
  async function login(
    client: () => Promise<ClientRecord>,
    act: 'approve' | 'abort' | 'ignore' = 'approve',
    extra: {
      sleep?: (ms: number, s: AbortSignal) => Promise<void>
      resource?: string
      issuer?: string
    } = {},
  ) {
    const events: RemoteAuthEvent[] = []
    let person: Promise<unknown> = Promise.resolve()
    const result = deviceLogin(
      {scopes: ['openid', 'offline_access'], resource: extra.resource ?? AUDIENCE},
      {
        server: await server(extra.issuer),
        fetch: http.trusted,
        client,
        progress: (e) => {
          events.push(e)
          if (e.event === 'device_code' && act !== 'ignore')
            person = approve(e.verification_uri_complete ?? e.verification_uri, act)
        },
        // Poll quickly: the provider's interval is 5 s, which is slow for a test.
        sleep:
          extra.sleep ??
          ((_ms, s) =>
            new Promise((r, j) => {
              const t = setTimeout(r, 100)
              s.addEventListener('abort', () => (clearTimeout(t), j(s.reason)), {once: true})
            })),
      },
    )
    const settled = await Promise.allSettled([result, person])
    return {result: settled[0], person: settled[1], events}
  }

  it('logs in when the person approves, with the RFC 8707 resource as the token audience', async () => {
    const {result, person, events} = await login(async () => DEVICE_CLIENT)
    assert.equal(person.status, 'fulfilled')
    assert.equal(result.status, 'fulfilled', String((result as PromiseRejectedResult).reason))
    const tokens = (result as PromiseFulfilledResult<Awaited<ReturnType<typeof deviceLogin>>>).value
      .tokens
    assert.ok(tokens.access_token)
    assert.ok(tokens.refresh_token, 'a refresh token, so the login survives restarts')
    const payload = JSON.parse(
      Buffer.from(tokens.access_token.split('.')[1]!, 'base64url').toString(),
    )
    assert.equal(payload.aud, AUDIENCE)
    assert.equal(payload.sub, 'dora')
    const shown = events.find((e) => e.event === 'device_code')
    assert.ok(shown && shown.event === 'device_code')
    assert.match(shown.user_code, /^[A-Z]{4}-?[A-Z]{4}$/)
    assert.ok(shown.verification_uri.startsWith(idp.issuer))
    assert.ok(shown.expires_in > 0)
  })

  it('registers a device client dynamically (RFC 7591, no redirect URI) and logs in with it', async () => {
    const srv = await server()
    const registered = await registerClient(srv, undefined, http.trusted)
    assert.equal(registered.device, true)
    assert.equal(registered.redirect_uri, undefined)
    const {result} = await login(async () => registered)
    assert.equal(result.status, 'fulfilled', String((result as PromiseRejectedResult).reason))
  })

  it('reports a denial at the authorization server as ERR_OAUTH_DENIED', async () => {
    const {result} = await login(async () => DEVICE_CLIENT, 'abort')
    assert.equal(result.status, 'rejected')
    assert.equal((result as PromiseRejectedResult).reason.code, 'ERR_OAUTH_DENIED')
  })

  it('slows down by 5 s when told to (RFC 8628 §3.5), then stops when the code expires', async () => {
    // A provider whose device codes live 2 s; it answers slow_down to a client polling faster
    // than the interval, and expired_token once the code is dead.
    const shortLived = await startDeviceProvider(2)
    after(() => shortLived.close())
    const waits: number[] = []
    const {result} = await login(async () => DEVICE_CLIENT, 'ignore', {
      issuer: shortLived.issuer,
      sleep: (ms, s) => {
        waits.push(ms)
        // Time passes only on the test's clock: poll at once, the code's own expiry ends it.
        return new Promise((r, j) => {
          const t = setTimeout(r, 20)
          s.addEventListener('abort', () => (clearTimeout(t), j(s.reason)), {once: true})
        })
      },
    })
    assert.equal(result.status, 'rejected')
    const err = (result as PromiseRejectedResult).reason
    assert.equal(err.code, 'ERR_OAUTH_TIMEOUT')
    assert.match(err.message, /device code expired/)
    assert.equal(waits[0], 5000, 'the provider sent no interval: RFC 8628 default 5 s')
    assert.ok(
      waits.some((w, i) => i > 0 && w === waits[i - 1]! + 5000),
      `a slow_down answer adds 5 s to the interval: ${waits.slice(0, 6).join(', ')}`,
    )
  })

  it('refuses a server without a device_authorization_endpoint, naming the alternatives', async () => {
    const srv = await server()
    const bare = {...srv, as: {...srv.as, device_authorization_endpoint: undefined}}
    await assert.rejects(
      deviceLogin(
        {scopes: []},
        {server: bare, fetch: http.trusted, client: async () => DEVICE_CLIENT, progress: () => {}},
      ),
      /no device_authorization_endpoint.*--remote-auth-flow browser.*client_credentials/,
    )
  })
})
