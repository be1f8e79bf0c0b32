/**
 * `toolgate serve` in oauth mode against a real OpenID provider (npm oidc-provider on loopback):
 * the auth gate, public paths, the RFC 9728 metadata and the exact 401 challenge of contract §1.
 */
import {after, before, test} from 'node:test'
import assert from 'node:assert/strict'
import {rmSync} from 'node:fs'
import {request} from 'node:http'
import {join} from 'node:path'
import {startOidcProvider, type OidcProviderFixture} from '../helpers/oidc-provider.ts'
import {
  FIXTURES,
  getJson,
  rawRequest,
  startServe,
  tempDir,
  writeConfig,
  type ServeProcess,
} from '../helpers/serve-process.ts'

const RESOURCE = 'https://registry.example.test'
const LIST = '/registry/default/v0.1/servers'
let op: OidcProviderFixture
let s: ServeProcess
let dir: string

before(async () => {
  op = await startOidcProvider({audience: 'api://registry'})
  dir = tempDir()
  const config = writeConfig(
    dir,
    'serve.json',
    JSON.stringify({
      sources: [{name: 'fixture', file: {path: join(FIXTURES, 'registry.json')}}],
      registries: [
        {name: 'default', sources: ['fixture']},
        {name: 'public', sources: ['fixture']},
      ],
      auth: {
        oauth: {
          resourceUrl: RESOURCE,
          realm: 'test-realm',
          publicPaths: ['/registry/public'],
          providers: [
            {
              name: 'local-op',
              issuerUrl: op.issuer,
              audience: 'api://registry',
              allowPrivateIP: true,
            },
          ],
        },
      },
    }),
  )
  s = await startServe(['--config', config, '--debug'], {dir})
})

after(async () => {
  await s?.stop()
  await op?.close()
  if (dir) rmSync(dir, {recursive: true, force: true})
})

function challenge(error: string, description: string): string {
  return `Bearer realm="test-realm", error="${error}", error_description="${description}", resource_metadata="${RESOURCE}/.well-known/oauth-protected-resource"`
}

test('a protected route without a token is 401 invalid_request with the contract challenge', async () => {
  const r = await getJson(s.url + LIST)
  assert.equal(r.status, 401)
  const body = r.body as {error: string}
  assert.deepEqual(Object.keys(body), ['error'])
  assert.equal(r.headers.get('www-authenticate'), challenge('invalid_request', body.error))
  assert.equal(r.headers.get('x-content-type-options'), 'nosniff')
})

test('a malformed Authorization header is 401 invalid_request', async () => {
  for (const authorization of [
    'Basic dXNlcjpwdw==',
    'Bearer',
    'bearer abc',
    'Bearer  two-spaces',
    'Bearer "quoted"',
  ]) {
    const r = await getJson(s.url + LIST, {headers: {authorization}})
    assert.equal(r.status, 401, authorization)
    assert.match(
      r.headers.get('www-authenticate') ?? '',
      /^Bearer realm="test-realm", error="invalid_request", error_description="(?:[^"\\]|\\.)+", resource_metadata="https:\/\/registry\.example\.test\/\.well-known\/oauth-protected-resource"$/,
    )
  }
})

test('an invalid or wrong-audience token is 401 invalid_token', async () => {
  const wrongAud = await op.issueAccessToken({audience: 'api://other'})
  const forged = (await op.issueAccessToken({audience: 'api://registry'})).slice(0, -4) + 'AAAA'
  for (const token of ['not-a-jwt', wrongAud, forged]) {
    const r = await getJson(s.url + LIST, {headers: {authorization: `Bearer ${token}`}})
    assert.equal(r.status, 401)
    const body = r.body as {error: string}
    assert.equal(r.headers.get('www-authenticate'), challenge('invalid_token', body.error))
  }
})

test('a valid token from the configured provider reaches the registry', async () => {
  const token = await op.clientCredentialsToken({resource: 'api://registry'})
  const r = await getJson(s.url + LIST + '?limit=2', {headers: {authorization: `Bearer ${token}`}})
  assert.equal(r.status, 200, r.text)
  assert.equal((r.body as {metadata: {count: number}}).metadata.count, 2)
  const one = await getJson(s.url + LIST + '/io.example%2Fweather/versions/latest', {
    headers: {authorization: `Bearer ${token}`},
  })
  assert.equal(one.status, 200)
})

test('unknown paths and internal paths are 401 on the main port without a token, never 200 or 404', async () => {
  for (const path of ['/nothing', '/health', '/metrics', '/registry/nope/v0.1/servers']) {
    assert.equal((await getJson(s.url + path)).status, 401, path)
  }
})

test('/openapi.json and the protected-resource metadata are public', async () => {
  const doc = await getJson(s.url + '/openapi.json')
  assert.equal(doc.status, 200)
  const list = (doc.body as {paths: Record<string, {get: {security: unknown}}>}).paths[
    '/registry/{registry}/v0.1/servers'
  ]!
  assert.deepEqual(list.get.security, [{bearerAuth: []}])
  const prm = await getJson(s.url + '/.well-known/oauth-protected-resource')
  assert.equal(prm.status, 200)
  assert.equal(
    prm.text,
    JSON.stringify({
      resource: RESOURCE,
      authorization_servers: [op.issuer],
      bearer_methods_supported: ['header'],
      resource_documentation: `${RESOURCE}/openapi.json`,
    }),
  )
  assert.equal((await getJson(s.url + '/.well-known/other')).status, 404)
})

test('oauth.publicPaths open a prefix at segment boundaries only, and encoded tricks stay protected', async () => {
  assert.equal((await rawRequest(s.url, '/registry/public/v0.1/servers?limit=1')).status, 200)
  // Contract §1: a path with an encoded / or . is never public, so on a public prefix the server
  // name must be sent with a raw slash to skip the token.
  assert.equal(
    (await rawRequest(s.url, '/registry/public/v0.1/servers/io.example/weather/versions')).status,
    200,
  )
  assert.equal(
    (await rawRequest(s.url, '/registry/public/v0.1/servers/io.example%2Fweather/versions')).status,
    401,
  )
  for (const path of [
    '/registry/publicx/v0.1/servers',
    '/registry/public/..%2fdefault/v0.1/servers',
  ]) {
    assert.equal((await rawRequest(s.url, path)).status, 401, path)
  }
  // A dot segment, literal or encoded, is refused before the gate looks at the path.
  for (const path of [
    '/registry/public/%2e%2e/default/v0.1/servers',
    '/registry/public/../default/v0.1/servers',
  ]) {
    const res = await rawRequest(s.url, path)
    assert.equal(res.status, 400, path)
    assert.match(res.text, /dot segments are not allowed/, path)
  }
})

test('tokens never appear in the logs, even with --debug', async () => {
  const token = await op.clientCredentialsToken({resource: 'api://registry'})
  await getJson(s.url + LIST, {headers: {authorization: `Bearer ${token}`}})
  await getJson(s.url + LIST, {headers: {authorization: `Bearer ${token}x`}})
  assert.ok(s.stderr().length > 0)
  assert.ok(!s.stderr().includes(token.slice(0, 40)))
  assert.ok(!s.stdout().includes(token.slice(0, 40)))
})

test('two Authorization headers are 401 invalid_request; a 64 KB token reaches the gate and is a 401', async () => {
  const token = await op.clientCredentialsToken({resource: 'api://registry'})
  const two = await new Promise<{status: number; challenge: string}>((resolve, reject) => {
    const u = new URL(s.url)
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: LIST,
        headers: {authorization: [`Bearer ${token}`, `Bearer ${token}`]} as Record<
          string,
          string[]
        >,
      },
      (res) => {
        res.resume()
        resolve({status: res.statusCode ?? 0, challenge: String(res.headers['www-authenticate'])})
      },
    )
    req.on('error', reject)
    req.end()
  })
  assert.equal(two.status, 401)
  assert.match(two.challenge, /error="invalid_request"/)
  const big = await getJson(s.url + LIST, {
    headers: {authorization: 'Bearer ' + 'A'.repeat(64 * 1024)},
  })
  assert.equal(big.status, 401)
  assert.match(
    big.headers.get('www-authenticate') ?? '',
    /^Bearer realm="test-realm", error="invalid_(request|token)"/,
  )
})
