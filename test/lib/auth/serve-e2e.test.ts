/**
 * The validator through the real `toolgate serve` process (bin/dev.js), two real providers:
 * valid tokens reach the registry, every hostile variant is a 401 with the contract challenge,
 * never a 5xx or a hang.
 */
import {after, before, test} from 'node:test'
import assert from 'node:assert/strict'
import {request} from 'node:http'
import {rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {
  OPAQUE_RESOURCE,
  startOidcProvider,
  type OidcProviderFixture,
} from '../../helpers/oidc-provider.ts'
import {
  FIXTURES,
  startServe,
  tempDir,
  writeConfig,
  type ServeProcess,
} from '../../helpers/serve-process.ts'

const LIST = '/registry/default/v0.1/servers'
let a: OidcProviderFixture
let b: OidcProviderFixture
let s: ServeProcess
let dir: string
const now = () => Math.floor(Date.now() / 1000)

before(async () => {
  a = await startOidcProvider({audience: 'api://registry'})
  b = await startOidcProvider({audience: 'api://registry'})
  dir = tempDir()
  writeFileSync(join(dir, 'b-secret'), b.client.clientSecret, {mode: 0o600})
  const config = writeConfig(
    dir,
    'serve.json',
    JSON.stringify({
      sources: [{name: 'fixture', file: {path: join(FIXTURES, 'registry.json')}}],
      registries: [{name: 'default', sources: ['fixture']}],
      auth: {
        oauth: {
          resourceUrl: 'https://registry.example.test',
          providers: [
            {name: 'a', issuerUrl: a.issuer, audience: 'api://registry', allowPrivateIP: true},
            {
              name: 'b',
              issuerUrl: b.issuer,
              audience: 'api://registry',
              allowPrivateIP: true,
              introspectionUrl: b.introspectionUrl,
              clientId: b.client.clientId,
              clientSecretFile: join(dir, 'b-secret'),
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
  await a?.close()
  await b?.close()
  if (dir) rmSync(dir, {recursive: true, force: true})
})

function get(
  authorization: string | string[] | undefined,
): Promise<{status: number; challenge: string | undefined}> {
  const u = new URL(s.url)
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: LIST,
        headers: (authorization === undefined ? {} : {authorization}) as Record<
          string,
          string | string[]
        >,
        timeout: 30_000,
      },
      (res) => {
        res.resume()
        res.on('end', () =>
          resolve({status: res.statusCode ?? 0, challenge: res.headers['www-authenticate']}),
        )
      },
    )
    req.on('timeout', () => req.destroy(new Error('request hung')))
    req.on('error', reject)
    req.end()
  })
}

test('JWT from provider A and an opaque token introspected at provider B both reach the registry', async () => {
  assert.equal(
    (await get(`Bearer ${await a.issueAccessToken({audience: 'api://registry'})}`)).status,
    200,
  )
  assert.equal(
    (await get(`Bearer ${await a.clientCredentialsToken({resource: 'api://registry'})}`)).status,
    200,
  )
  assert.equal(
    (
      await get(
        `Bearer ${await b.issueAccessToken({audience: 'api://registry', format: 'opaque'})}`,
      )
    ).status,
    200,
  )
})

test('hostile tokens and headers through serve are 401 with the challenge, never 5xx or a hang', async () => {
  const good = {iss: a.issuer, aud: 'api://registry', sub: 'alice', exp: now() + 600}
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')
  const valid = await a.signJwt(good)
  const cases: Array<[string, string | string[] | undefined]> = [
    ['alg none', `Bearer ${b64({alg: 'none'})}.${b64(good)}.`],
    ['foreign key claiming A', `Bearer ${await b.signJwt(good)}`],
    ['expired', `Bearer ${await a.signJwt({...good, exp: now() - 10})}`],
    ['nbf future', `Bearer ${await a.signJwt({...good, nbf: now() + 600})}`],
    ['no exp', `Bearer ${await a.signJwt({iss: a.issuer, aud: 'api://registry', sub: 'x'})}`],
    ['iss trailing slash', `Bearer ${await a.signJwt({...good, iss: a.issuer + '/'})}`],
    ['aud mismatch', `Bearer ${await a.signJwt({...good, aud: 'api://other'})}`],
    ['opaque unknown to B', 'Bearer not-a-real-opaque-token'],
    [
      'opaque from B for another audience',
      `Bearer ${await b.clientCredentialsToken({resource: OPAQUE_RESOURCE})}`,
    ],
    ['garbage', 'Bearer x.y.z'],
    ['12 KB token', 'Bearer ' + 'A'.repeat(12 * 1024)],
    ['bearer lower-case', `bearer ${valid}`],
    ['two spaces', `Bearer  ${valid}`],
    ['quoted', `Bearer "${valid}"`],
    ['scheme only', 'Bearer'],
    ['Basic', 'Basic dXNlcjpwYXNz'],
    ['none', undefined],
  ]
  for (const [name, header] of cases) {
    const r = await get(header)
    assert.equal(r.status, 401, `${name}: ${r.status}`)
    assert.match(
      r.challenge ?? '',
      /^Bearer realm="mcp-registry", error="invalid_(request|token)", error_description="[^"]+", resource_metadata="https:\/\/registry\.example\.test\/\.well-known\/oauth-protected-resource"$/,
      name,
    )
  }
  assert.equal(
    (await get(`Bearer ${valid}`)).status,
    200,
    'control: the valid token used above is accepted',
  )
})

test('two Authorization headers through serve are 401 invalid_request', async () => {
  const valid = await a.signJwt({
    iss: a.issuer,
    aud: 'api://registry',
    sub: 'alice',
    exp: now() + 600,
  })
  const r = await get([`Bearer ${valid}`, `Bearer ${valid}`])
  assert.equal(r.status, 401)
  assert.match(r.challenge ?? '', /error="invalid_request"/)
})

test('a 64 KB token through serve is a 401', async () => {
  const r = await get('Bearer ' + 'A'.repeat(64 * 1024))
  assert.equal(r.status, 401)
})

test('serve logs never contain a token', async () => {
  const token = await a.issueAccessToken({audience: 'api://registry'})
  await get(`Bearer ${token}`)
  await get(`Bearer ${token}x`)
  const logs = s.stdout() + s.stderr()
  for (const part of token.split('.')) assert.ok(!logs.includes(part))
})
