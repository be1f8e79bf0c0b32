import {test} from 'node:test'
import assert from 'node:assert/strict'
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {createAuthenticator} from '../../../src/lib/auth/index.ts'
import type {OAuthConfig, ProviderConfig} from '../../../src/lib/auth/types.ts'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {providerConfigOf, startOidcProvider} from '../../helpers/oidc-provider.ts'

const oauth = (providers: ProviderConfig[]): OAuthConfig => ({
  resourceUrl: 'http://127.0.0.1/r',
  realm: 'mcp-registry',
  publicPaths: [],
  providers,
})

/**
 * A stand-in introspection endpoint that misbehaves on purpose (500, garbage, silence): a real
 * provider cannot be made to do that, so this is the one hand-written server in these tests.
 */
async function misbehaving(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{url: string; server: Server; close(): Promise<void>}> {
  const server = createServer(handler)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    server,
    close: () => {
      server.closeAllConnections()
      return new Promise<void>((r) => server.close(() => r()))
    },
  }
}

test('provider down at startup: 401 "token could not be validated", then recovery without restart', async (t) => {
  const fx = await startOidcProvider()
  t.after(() => fx.close())
  const token = await fx.issueAccessToken({sub: 'late'})
  await fx.stop()
  const logger = createMemoryLogger()
  const auth = createAuthenticator(oauth([providerConfigOf(fx, {name: 'late-idp'})]), {logger})
  t.after(() => auth.close())
  assert.deepEqual(await auth.authenticate(`Bearer ${token}`), {
    ok: false,
    error: 'invalid_token',
    description: 'token could not be validated',
    reason: 'provider_unavailable',
  })
  assert.ok(
    logger.lines.some(
      (l) => l.includes('WARN') && l.includes('late-idp') && l.includes('unavailable'),
    ),
    logger.lines.join('\n'),
  )
  await fx.start()
  const outcome = await auth.authenticate(`Bearer ${token}`)
  assert.equal(outcome.ok, true)
  assert.ok(logger.lines.some((l) => l.includes('reachable again')))
})

test('provider down mid-run: introspection fails closed with 401, and recovers when it returns', async (t) => {
  const fx = await startOidcProvider()
  t.after(() => fx.close())
  const dir = mkdtempSync(join(tmpdir(), 'toolgate-res-'))
  t.after(() => rmSync(dir, {recursive: true, force: true}))
  writeFileSync(join(dir, 'secret'), fx.client.clientSecret, {mode: 0o600})
  const cfg = providerConfigOf(fx, {
    name: 'mid',
    introspectionUrl: fx.introspectionUrl,
    clientId: fx.client.clientId,
    clientSecretFile: join(dir, 'secret'),
  })
  const auth = createAuthenticator(oauth([cfg]), {logger: createMemoryLogger()})
  t.after(() => auth.close())
  assert.equal(
    (await auth.authenticate(`Bearer ${await fx.issueAccessToken({format: 'opaque'})}`)).ok,
    true,
  )
  const second = await fx.issueAccessToken({format: 'opaque', sub: 'second'})
  await fx.stop()
  assert.deepEqual(await auth.authenticate(`Bearer ${second}`), {
    ok: false,
    error: 'invalid_token',
    description: 'token could not be validated',
    reason: 'provider_unavailable',
  })
  await fx.start()
  assert.equal((await auth.authenticate(`Bearer ${second}`)).ok, true)
})

test('a provider that accepts connections but never answers gives 401 once the timeout passes', async (t) => {
  const silent = await misbehaving(() => {})
  t.after(() => silent.close())
  const auth = createAuthenticator(
    oauth([{name: 'silent', issuerUrl: silent.url, audience: 'x', allowPrivateIP: true}]),
    {logger: createMemoryLogger(), timeoutMs: 300},
  )
  t.after(() => auth.close())
  const fx = await startOidcProvider()
  t.after(() => fx.close())
  const token = await fx.signJwt({
    iss: silent.url,
    aud: 'x',
    sub: 's',
    exp: Math.floor(Date.now() / 1000) + 60,
  })
  const outcome = await auth.authenticate(`Bearer ${token}`)
  assert.deepEqual(outcome, {
    ok: false,
    error: 'invalid_token',
    description: 'token could not be validated',
    reason: 'provider_unavailable',
  })
})

for (const [name, respond] of [
  ['HTTP 500', (res: ServerResponse) => res.writeHead(500).end('{"active":true}')],
  [
    'garbage',
    (res: ServerResponse) =>
      res.writeHead(200, {'content-type': 'application/json'}).end('<html>not json'),
  ],
  [
    'a JSON array',
    (res: ServerResponse) =>
      res.writeHead(200, {'content-type': 'application/json'}).end('[{"active":true}]'),
  ],
  [
    'active as the string "true"',
    (res: ServerResponse) =>
      res.writeHead(200).end(JSON.stringify({active: 'true', sub: 'x', aud: 'x', exp: 9999999999})),
  ],
  [
    'active without exp',
    (res: ServerResponse) =>
      res.writeHead(200).end(JSON.stringify({active: true, sub: 'x', aud: 'x'})),
  ],
  [
    'active refresh token',
    (res: ServerResponse) =>
      res.writeHead(200).end(
        JSON.stringify({
          active: true,
          sub: 'x',
          aud: 'x',
          exp: 9999999999,
          token_type: 'refresh_token',
        }),
      ),
  ],
  [
    'active with a foreign iss',
    (res: ServerResponse) =>
      res.writeHead(200).end(
        JSON.stringify({
          active: true,
          sub: 'x',
          aud: 'x',
          exp: 9999999999,
          iss: 'https://evil.example',
        }),
      ),
  ],
  [
    'a redirect',
    (res: ServerResponse) => res.writeHead(302, {location: 'http://169.254.169.254/'}).end(),
  ],
] as const) {
  test(`introspection answering ${name} is a 401, never an acceptance or an exception`, async (t) => {
    const srv = await misbehaving((_req, res) => respond(res))
    t.after(() => srv.close())
    const auth = createAuthenticator(
      oauth([
        {
          name: 'bad',
          issuerUrl: srv.url,
          audience: 'x',
          introspectionUrl: `${srv.url}/introspect`,
          clientId: 'c',
          clientSecret: 's',
          allowPrivateIP: true,
        },
      ]),
      {logger: createMemoryLogger()},
    )
    t.after(() => auth.close())
    const outcome = await auth.authenticate('Bearer opaque-token-value-123')
    assert.equal(outcome.ok, false)
  })
}

test('control: the stand-in introspection endpoint can produce an acceptance', async (t) => {
  const srv = await misbehaving((_req, res) =>
    res
      .writeHead(200)
      .end(
        JSON.stringify({active: true, sub: 'x', aud: 'x', exp: 9999999999, token_type: 'Bearer'}),
      ),
  )
  t.after(() => srv.close())
  const auth = createAuthenticator(
    oauth([
      {
        name: 'ok',
        issuerUrl: srv.url,
        audience: 'x',
        introspectionUrl: `${srv.url}/introspect`,
        clientId: 'c',
        clientSecret: 's',
        allowPrivateIP: true,
      },
    ]),
    {logger: createMemoryLogger()},
  )
  t.after(() => auth.close())
  assert.equal((await auth.authenticate('Bearer opaque-token-value-123')).ok, true)
})

test('SSRF: a loopback provider is refused without allowPrivateIP, with a log line naming the host', async (t) => {
  const fx = await startOidcProvider()
  t.after(() => fx.close())
  const token = await fx.issueAccessToken()
  const seen = fx.requests.length
  const localhostIssuer = fx.issuer.replace('127.0.0.1', 'localhost')
  for (const [cfg, host] of [
    [providerConfigOf(fx, {name: 'literal', allowPrivateIP: false}), '127.0.0.1'],
    [
      providerConfigOf(fx, {
        name: 'by-name',
        allowPrivateIP: false,
        issuerUrl: fx.issuer,
        jwksUrl: `${localhostIssuer}/jwks`,
      }),
      'localhost',
    ],
  ] as const) {
    const logger = createMemoryLogger()
    const auth = createAuthenticator(oauth([cfg]), {logger})
    const outcome = await auth.authenticate(`Bearer ${token}`)
    await auth.close()
    assert.equal(outcome.ok, false)
    const line = logger.lines.find((l) => l.includes('refused'))
    assert.ok(line, logger.lines.join('\n'))
    assert.match(line, new RegExp(`outbound request to ${host} refused: loopback address`))
    assert.match(line, /allowPrivateIP/)
  }
  assert.equal(fx.requests.length, seen, 'the refused provider was never contacted')
})

test('proxy mode (trustConfiguredUrls): an operator-typed loopback issuer works without allowPrivateIP', async (t) => {
  const fx = await startOidcProvider()
  t.after(() => fx.close())
  const auth = createAuthenticator(
    oauth([
      providerConfigOf(fx, {name: 'proxy', allowPrivateIP: false, trustConfiguredUrls: true}),
    ]),
    {logger: createMemoryLogger()},
  )
  t.after(() => auth.close())
  assert.equal((await auth.authenticate(`Bearer ${await fx.issueAccessToken()}`)).ok, true)
})
