import assert from 'node:assert/strict'
import {createServer, type ServerResponse} from 'node:http'
import {after, before, describe, it} from 'node:test'
import {createLocalJWKSet, jwtVerify, type JWK} from 'jose'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {staticTokenSource} from '../../../src/lib/proxy/outgoing-auth.ts'
import {startProxy, type ProxyConfig} from '../../../src/lib/proxy/proxy-server.ts'
import {
  MAX_EXCHANGE_RESPONSE,
  createTokenExchanger,
} from '../../../src/lib/token-exchange/exchanger.ts'
import {
  GRANT_TYPE,
  TOKEN_TYPE_ACCESS,
  processExchangeResponse,
  type TokenExchangeConfig,
} from '../../../src/lib/token-exchange/request.ts'
import {startRecordingUpstream, type RecordingUpstream} from '../../helpers/mcp-upstream.ts'
import {startOidcProvider, type OidcProviderFixture} from '../../helpers/oidc-provider.ts'
import {loopbackProxyConfig} from '../../helpers/proxy-config.ts'

interface ExchangeSeen {
  subjectType: string
  requestedType: string
  audience: string | undefined
  scope: string | undefined
  sub: string
}

/**
 * RFC 8693 against a real oidc-provider: it has no token exchange built in, so the test registers
 * the grant (testing.md) with a handler that verifies the subject token with the provider's key
 * and mints a real access token for the requested audience.
 */
describe('token exchange (RFC 8693)', () => {
  let idp: OidcProviderFixture
  let upstream: RecordingUpstream
  const exchanges: ExchangeSeen[] = []
  const exchangeClient = {clientId: 'exchanger', clientSecret: 'exchanger-secret-0123456789'}
  let failNext = false
  const logger = createMemoryLogger()

  before(async () => {
    idp = await startOidcProvider({
      audience: 'api://incoming',
      clients: [
        {
          client_id: exchangeClient.clientId,
          client_secret: exchangeClient.clientSecret,
          grant_types: [GRANT_TYPE],
          response_types: [],
          redirect_uris: [],
          token_endpoint_auth_method: 'client_secret_basic',
        },
      ],
      setup: (provider) => {
        provider.registerGrantType(
          GRANT_TYPE,
          async (ctx: {
            oidc: {params: Record<string, string | undefined>}
            status: number
            body: unknown
          }) => {
            const p = ctx.oidc.params
            if (failNext) {
              failNext = false
              ctx.status = 400
              ctx.body = {error: 'invalid_grant', error_description: 'subject refused'}
              return
            }
            const pub = {...(idp.signingKey as JWK)}
            for (const k of ['d', 'p', 'q', 'dp', 'dq', 'qi'])
              delete (pub as Record<string, unknown>)[k]
            let sub: string
            try {
              const {payload} = await jwtVerify(
                p.subject_token!,
                createLocalJWKSet({keys: [pub]}),
                {issuer: idp.issuer},
              )
              sub = String(payload.sub)
            } catch {
              ctx.status = 400
              ctx.body = {error: 'invalid_grant', error_description: 'bad subject token'}
              return
            }
            exchanges.push({
              subjectType: p.subject_token_type!,
              requestedType: p.requested_token_type!,
              audience: p.audience,
              scope: p.scope,
              sub,
            })
            const accessToken = await idp.issueAccessToken({
              sub,
              audience: p.audience ?? 'api://default',
              clientId: exchangeClient.clientId,
            })
            ctx.body = {
              access_token: accessToken,
              issued_token_type: TOKEN_TYPE_ACCESS,
              token_type: 'Bearer',
              expires_in: 300,
            }
          },
          [
            'subject_token',
            'subject_token_type',
            'requested_token_type',
            'audience',
            'scope',
            'resource',
          ],
        )
      },
    })
    upstream = await startRecordingUpstream()
  })
  after(async () => {
    await upstream?.close()
    await idp?.close()
  })

  const exchangeConfig = (extra: Partial<TokenExchangeConfig> = {}): TokenExchangeConfig => ({
    url: idp.tokenUrl,
    clientId: exchangeClient.clientId,
    clientSecret: exchangeClient.clientSecret,
    audience: 'api://backend',
    scopes: ['read'],
    subjectTokenType: 'access_token',
    timeoutMs: 10_000,
    ...extra,
  })

  const withProxy = async (extra: Partial<ProxyConfig>, fn: (url: string) => Promise<void>) => {
    const proxy = await startProxy(loopbackProxyConfig(upstream.url, {name: 'x', ...extra}), {
      logger,
    })
    try {
      await fn(proxy.url)
    } finally {
      await proxy.close()
    }
  }

  const post = (url: string, authorization?: string) =>
    fetch(url + '/mcp', {
      method: 'POST',
      headers: {'content-type': 'application/json', ...(authorization ? {authorization} : {})},
      body: '{}',
    })

  it('replaces Authorization with the exchanged token, subject = the validated incoming bearer', async () => {
    const incoming = await idp.issueAccessToken({sub: 'bob', audience: 'api://incoming'})
    await withProxy(
      {
        oidc: {issuer: idp.issuer, audience: 'api://incoming', scopes: ['openid']},
        tokenExchange: createTokenExchanger(exchangeConfig(), {logger}),
      },
      async (url) => {
        const seen = upstream.requests.length
        const before = exchanges.length
        const res = await post(url, `Bearer ${incoming}`)
        assert.equal(res.status, 200)
        await res.text()
        const rec = upstream.requests[seen]!
        const forwarded = /^Bearer (.+)$/.exec(String(rec.headers.authorization))?.[1]
        assert.ok(forwarded && forwarded !== incoming, 'the target sees a different token')
        const claims = JSON.parse(Buffer.from(forwarded.split('.')[1]!, 'base64url').toString())
        assert.equal(claims.aud, 'api://backend')
        assert.equal(claims.sub, 'bob')
        assert.deepEqual(exchanges[before], {
          subjectType: 'urn:ietf:params:oauth:token-type:access_token',
          requestedType: 'urn:ietf:params:oauth:token-type:access_token',
          audience: 'api://backend',
          scope: 'read',
          sub: 'bob',
        })
        // Cached per subject: a second request reuses the exchanged token.
        const again = await post(url, `Bearer ${incoming}`)
        await again.text()
        assert.equal(exchanges.length, before + 1)
        assert.equal(upstream.requests[seen + 1]!.headers.authorization, `Bearer ${forwarded}`)
        assert.ok(
          !logger.lines.join('\n').includes(forwarded) &&
            !logger.lines.join('\n').includes(incoming),
        )
      },
    )
  })

  it('puts the exchanged token in --token-exchange-header-name and drops the client Authorization', async () => {
    const incoming = await idp.issueAccessToken({sub: 'carol', audience: 'api://incoming'})
    await withProxy(
      {
        tokenExchange: createTokenExchanger(exchangeConfig({headerName: 'x-upstream-token'}), {
          logger,
        }),
      },
      async (url) => {
        const seen = upstream.requests.length
        const res = await post(url, `Bearer ${incoming}`)
        assert.equal(res.status, 200)
        await res.text()
        const rec = upstream.requests[seen]!
        assert.match(String(rec.headers['x-upstream-token']), /^Bearer eyJ/)
        assert.equal(rec.headers.authorization, undefined)
      },
    )
  })

  it('exchanges the outgoing token (not the client one) when both exist, with the id_token subject type', async () => {
    const idToken = await idp.signJwt(
      {
        iss: idp.issuer,
        sub: 'dave',
        aud: exchangeClient.clientId,
        iat: Math.floor(Date.now() / 1000),
        exp: Math.floor(Date.now() / 1000) + 600,
      },
      {typ: 'JWT'},
    )
    await withProxy(
      {
        upstreamToken: staticTokenSource(idToken),
        tokenExchange: createTokenExchanger(exchangeConfig({subjectTokenType: 'id_token'}), {
          logger,
        }),
      },
      async (url) => {
        const before = exchanges.length
        const res = await post(url, 'Bearer client-token-not-a-jwt')
        assert.equal(res.status, 200)
        await res.text()
        assert.equal(exchanges[before]?.subjectType, 'urn:ietf:params:oauth:token-type:id_token')
        assert.equal(exchanges[before]?.sub, 'dave')
      },
    )
  })

  // The target refuses tokens exchanged for the stale outgoing token; the source refreshes only
  // when told the rejected token is its current one (as the OAuth token source does).
  for (const headerName of [undefined, 'x-upstream-token']) {
    it(`retries a 401 with a token exchanged from the refreshed outgoing token (${headerName ?? 'Authorization'})`, async () => {
      const stale = await idp.issueAccessToken({sub: 'stale-login', audience: 'api://incoming'})
      const fresh = await idp.issueAccessToken({sub: 'fresh-login', audience: 'api://incoming'})
      const told: string[] = []
      const header = headerName ?? 'authorization'
      upstream.respond((req, res) => {
        const token = /^Bearer (.+)$/.exec(String(req.headers[header]))?.[1] ?? ''
        const sub = token
          ? JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()).sub
          : undefined
        if (sub === 'fresh-login') res.end('ok')
        else {
          res.writeHead(401, {'www-authenticate': 'Bearer error="invalid_token"'})
          res.end()
        }
      })
      let current = stale
      const source = {
        getToken: async () => current,
        onUnauthorized: async (rejected: string) => {
          told.push(rejected)
          if (rejected !== current) return current
          current = fresh
          return fresh
        },
      }
      try {
        await withProxy(
          {
            upstreamToken: source,
            tokenExchange: createTokenExchanger(exchangeConfig(headerName ? {headerName} : {}), {
              logger,
            }),
          },
          async (url) => {
            const seen = upstream.requests.length
            const res = await post(url, 'Bearer client-token')
            assert.equal(res.status, 200)
            assert.equal(await res.text(), 'ok')
            assert.deepEqual(told, [stale], 'the source is told its own token was rejected')
            assert.equal(upstream.requests.length, seen + 2)
            const retried = String(upstream.requests[seen + 1]!.headers[header])
            assert.notEqual(retried, String(upstream.requests[seen]!.headers[header]))
          },
        )
      } finally {
        upstream.respond((_req, res) => {
          res.writeHead(200, {'content-type': 'application/json'})
          res.end('{"ok":true}')
        })
      }
    })
  }

  it('answers 401 Token exchange failed when the server refuses, and forwards nothing', async () => {
    const incoming = await idp.issueAccessToken({sub: 'erin', audience: 'api://incoming'})
    await withProxy(
      {tokenExchange: createTokenExchanger(exchangeConfig(), {logger})},
      async (url) => {
        failNext = true
        const seen = upstream.requests.length
        const res = await post(url, `Bearer ${incoming}`)
        assert.equal(res.status, 401)
        assert.deepEqual(await res.json(), {error: 'Token exchange failed'})
        assert.equal(upstream.requests.length, seen)
      },
    )
  })

  it('answers 401 when the client credentials are wrong', async () => {
    const incoming = await idp.issueAccessToken({sub: 'frank', audience: 'api://incoming'})
    await withProxy(
      {tokenExchange: createTokenExchanger(exchangeConfig({clientSecret: 'wrong'}), {logger})},
      async (url) => {
        const res = await post(url, `Bearer ${incoming}`)
        assert.equal(res.status, 401)
        assert.deepEqual(await res.json(), {error: 'Token exchange failed'})
      },
    )
  })

  it('answers 401 when there is no subject token at all', async () => {
    await withProxy(
      {tokenExchange: createTokenExchanger(exchangeConfig(), {logger})},
      async (url) => {
        const res = await post(url)
        assert.equal(res.status, 401)
        assert.deepEqual(await res.json(), {error: 'Token exchange failed'})
      },
    )
  })
})

describe('token exchange response processing', () => {
  // What the guarded client's fetchJson hands over: the status and the parsed body (undefined when not JSON).
  const json = (status: number, body: unknown) => ({status, body})

  it('accepts a Bearer token with expires_in', async () => {
    assert.deepEqual(
      processExchangeResponse(json(200, {access_token: 'a', token_type: 'Bearer', expires_in: 60})),
      {accessToken: 'a', expiresIn: 60},
    )
  })

  const refused: Array<[string, {status: number; body: unknown}, RegExp]> = [
    [
      'an OAuth error, keeping only the error code',
      json(400, {error: 'invalid_grant', error_description: 'secret detail'}),
      /HTTP 400 error=invalid_grant$/,
    ],
    ['a missing access_token', json(200, {token_type: 'Bearer'}), /no access_token/],
    [
      'a non-Bearer token type',
      json(200, {access_token: 'a', token_type: 'N_A'}),
      /token_type must be Bearer/,
    ],
    [
      'a negative expires_in',
      json(200, {access_token: 'a', token_type: 'Bearer', expires_in: -1}),
      /expires_in/,
    ],
    ['a non-JSON body', {status: 502, body: undefined}, /not JSON/],
  ]
  for (const [what, res, pattern] of refused) {
    it(`refuses ${what}`, async () => {
      assert.throws(
        () => processExchangeResponse(res),
        (err: Error & {code?: string}) => {
          assert.equal(err.code, 'ERR_TOKEN_EXCHANGE')
          assert.match(err.message, pattern)
          assert.doesNotMatch(err.message, /secret detail/)
          return true
        },
      )
    })
  }

  // Cache timing needs a controlled clock; the injected client stands in for the token endpoint
  // only to count calls (the real endpoint is exercised above).
  it('refreshes a cached token shortly before it expires', async () => {
    let now = 1_000_000
    let calls = 0
    const outbound = {
      fetchJson: async () => {
        calls++
        return {
          status: 200,
          headers: new Headers(),
          body: {access_token: `t${calls}`, token_type: 'Bearer', expires_in: 120},
        }
      },
      close: async () => undefined,
    }
    const ex = createTokenExchanger(
      {url: 'http://127.0.0.1:1/token', subjectTokenType: 'access_token', timeoutMs: 1000},
      {logger: createMemoryLogger(), outbound, now: () => now, skewMs: 30_000},
    )
    assert.equal(await ex.exchange('subject-a'), 't1')
    now += 80_000
    assert.equal(await ex.exchange('subject-a'), 't1')
    assert.equal(await ex.exchange('subject-b'), 't2', 'cache is per subject')
    now += 11_000 // 91 s after the first: inside the 30 s skew before its 120 s expiry
    assert.equal(await ex.exchange('subject-a'), 't3')
  })
})

describe('token exchange endpoint calls', () => {
  /** A loopback token endpoint that answers with `body` (a misbehaving or hostile one). */
  async function endpoint(
    handler: (res: ServerResponse) => void,
  ): Promise<{url: string; close(): Promise<void>}> {
    const server = createServer((req, res) => {
      req.resume()
      req.on('end', () => handler(res))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return {
      url: `http://127.0.0.1:${(server.address() as {port: number}).port}/token`,
      async close() {
        server.closeAllConnections()
        await new Promise((r) => server.close(r))
      },
    }
  }

  it(`refuses an answer larger than ${MAX_EXCHANGE_RESPONSE} bytes without reading it whole`, async () => {
    const big = await endpoint((res) => {
      res.writeHead(200, {'content-type': 'application/json'})
      res.end(JSON.stringify({access_token: 'a'.repeat(200 * 1024), token_type: 'Bearer'}))
    })
    const ex = createTokenExchanger(
      {url: big.url, subjectTokenType: 'access_token', timeoutMs: 10_000},
      {logger: createMemoryLogger()},
    )
    try {
      await assert.rejects(ex.exchange('subject'), (err: Error & {code?: string}) => {
        assert.equal(err.code, 'ERR_TOKEN_EXCHANGE')
        assert.match(err.message, /exceeds 65536 bytes/)
        return true
      })
    } finally {
      await ex.close()
      await big.close()
    }
  })

  it('gives up after its timeout when the endpoint never answers', async () => {
    const silent = await endpoint(() => undefined)
    const ex = createTokenExchanger(
      {url: silent.url, subjectTokenType: 'access_token', timeoutMs: 300},
      {logger: createMemoryLogger()},
    )
    try {
      await assert.rejects(ex.exchange('subject'), /token exchange: timed out after 300 ms/)
    } finally {
      await ex.close()
      await silent.close()
    }
  })
})
