import assert from 'node:assert/strict'
import {after, before, describe, it} from 'node:test'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {staticTokenSource} from '../../../src/lib/proxy/outgoing-auth.ts'
import {
  startProxy,
  type ProxyConfig,
  type RunningProxy,
} from '../../../src/lib/proxy/proxy-server.ts'
import {startRecordingUpstream, type RecordingUpstream} from '../../helpers/mcp-upstream.ts'
import {startOidcProvider, type OidcProviderFixture} from '../../helpers/oidc-provider.ts'
import {loopbackProxyConfig} from '../../helpers/proxy-config.ts'

/** Incoming OIDC protection of the proxy (contract §2, §3) against a real oidc-provider. */
describe('proxy incoming OIDC', () => {
  let idp: OidcProviderFixture
  let upstream: RecordingUpstream
  let proxy: RunningProxy
  let resourceUrl: string
  const logger = createMemoryLogger()

  const start = (extra: Partial<ProxyConfig> = {}) =>
    startProxy(
      loopbackProxyConfig(upstream.url, {
        name: 'protected',
        oidc: {issuer: idp.issuer, audience: 'api://weather', scopes: ['openid', 'mcp:tools']},
        ...extra,
      }),
      {logger},
    )

  before(async () => {
    idp = await startOidcProvider({audience: 'api://weather'})
    upstream = await startRecordingUpstream()
    resourceUrl = 'http://127.0.0.1:8080/mcp'
    proxy = await start({resourceUrl})
  })
  after(async () => {
    await proxy?.close()
    await upstream?.close()
    await idp?.close()
  })

  const post = (headers: Record<string, string>, url = proxy.url) =>
    fetch(url + '/mcp', {
      method: 'POST',
      headers: {'content-type': 'application/json', ...headers},
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    })

  it('forwards a request with a valid token from the issuer', async () => {
    const token = await idp.issueAccessToken({audience: 'api://weather'})
    const seen = upstream.requests.length
    const res = await post({authorization: `Bearer ${token}`})
    assert.equal(res.status, 200)
    await res.text()
    assert.equal(upstream.requests.length, seen + 1)
  })

  const expectedChallenge = (error: string, description: string) =>
    `Bearer realm="${idp.issuer}", resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp", ` +
    `scope="openid mcp:tools", error="${error}", error_description="${description}"`

  it('answers 401 invalid_request with the contract challenge when the token is missing', async () => {
    const seen = upstream.requests.length
    const res = await post({})
    assert.equal(res.status, 401)
    assert.equal(
      res.headers.get('www-authenticate'),
      expectedChallenge('invalid_request', 'missing bearer token'),
    )
    assert.deepEqual(await res.json(), {
      error: 'invalid_request',
      error_description: 'missing bearer token',
    })
    assert.equal(upstream.requests.length, seen, 'nothing reached the target')
  })

  const invalid: Array<[string, () => Promise<string>]> = [
    ['a token for another audience', () => idp.issueAccessToken({audience: 'api://other'})],
    [
      'a token with a tampered signature',
      async () => (await idp.issueAccessToken({audience: 'api://weather'})).slice(0, -4) + 'AAAA',
    ],
    [
      'an expired token',
      () => idp.signJwt({iss: idp.issuer, sub: 'alice', aud: 'api://weather', iat: 1, exp: 2}),
    ],
    [
      'a token of another issuer',
      () =>
        idp.signJwt({
          iss: 'http://127.0.0.1:1',
          sub: 'alice',
          aud: 'api://weather',
          exp: Math.floor(Date.now() / 1000) + 600,
        }),
    ],
  ]
  for (const [what, mint] of invalid) {
    it(`answers 401 invalid_token for ${what}, before anything reaches the target`, async () => {
      const token = await mint()
      const seen = upstream.requests.length
      const res = await post({authorization: `Bearer ${token}`})
      assert.equal(res.status, 401)
      const body = (await res.json()) as {error: string; error_description: string}
      assert.equal(body.error, 'invalid_token')
      assert.equal(
        res.headers.get('www-authenticate'),
        expectedChallenge('invalid_token', body.error_description),
      )
      assert.equal(upstream.requests.length, seen)
      assert.ok(!logger.lines.join('\n').includes(token), 'token must not be logged')
    })
  }

  it('answers 401 invalid_request for a malformed Authorization header', async () => {
    const res = await post({authorization: 'Basic dXNlcjpwYXNz'})
    assert.equal(res.status, 401)
    assert.equal(((await res.json()) as {error: string}).error, 'invalid_request')
  })

  it('serves RFC 9728 metadata at the plain and the path-suffixed well-known paths, without auth and with CORS', async () => {
    for (const path of [
      '/.well-known/oauth-protected-resource',
      '/.well-known/oauth-protected-resource/mcp',
    ]) {
      const res = await fetch(proxy.url + path, {headers: {origin: 'https://elsewhere.test'}})
      assert.equal(res.status, 200, path)
      assert.equal(res.headers.get('access-control-allow-origin'), '*')
      assert.deepEqual(await res.json(), {
        resource: resourceUrl,
        authorization_servers: [idp.issuer],
        bearer_methods_supported: ['header'],
        scopes_supported: ['openid', 'mcp:tools'],
      })
    }
    const pre = await fetch(proxy.url + '/.well-known/oauth-protected-resource', {
      method: 'OPTIONS',
    })
    assert.equal(pre.status, 204)
    assert.match(pre.headers.get('access-control-allow-methods') ?? '', /GET/)
  })

  it('does not serve metadata without --resource-url and leaves resource_metadata out of the challenge', async () => {
    const p = await start()
    try {
      const meta = await fetch(p.url + '/.well-known/oauth-protected-resource')
      assert.equal(meta.status, 401)
      await meta.text()
      const res = await post({}, p.url)
      assert.equal(
        res.headers.get('www-authenticate'),
        `Bearer realm="${idp.issuer}", scope="openid mcp:tools", error="invalid_request", error_description="missing bearer token"`,
      )
      await res.text()
    } finally {
      await p.close()
    }
  })

  it('never forwards the client Authorization when an outgoing token is configured', async () => {
    const p = await start({upstreamToken: staticTokenSource('remote-token')})
    try {
      const token = await idp.issueAccessToken({audience: 'api://weather'})
      const seen = upstream.requests.length
      const res = await post({authorization: `Bearer ${token}`}, p.url)
      assert.equal(res.status, 200)
      await res.text()
      const rec = upstream.requests[seen]!
      assert.equal(rec.headers.authorization, 'Bearer remote-token')
      assert.ok(!JSON.stringify(rec.rawHeaders).includes(token))
    } finally {
      await p.close()
    }
  })
})
