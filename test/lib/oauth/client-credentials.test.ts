import assert from 'node:assert/strict'
import {generateKeyPairSync} from 'node:crypto'
import {mkdtempSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {decodeJwt} from 'jose'
import {
  ClientCredentialsTokenSource,
  loadClientKey,
  type ClientCredential,
} from '../../../src/lib/oauth/client-credentials.ts'
import {resolveServer} from '../../../src/lib/oauth/discovery.ts'
import {createOAuthHttp, type OAuthHttp} from '../../../src/lib/oauth/oauth-http.ts'
import {startOidcProvider, type OidcProviderFixture} from '../../helpers/oidc-provider.ts'

const RESOURCE = 'https://mcp.example.test/mcp'
const dir = mkdtempSync(join(tmpdir(), 'tg-cc-'))

const ec = generateKeyPairSync('ec', {namedCurve: 'P-256'})
const rsa = generateKeyPairSync('rsa', {modulusLength: 2048})
const ecPem = join(dir, 'ec.pem')
writeFileSync(ecPem, ec.privateKey.export({format: 'pem', type: 'pkcs8'}), {mode: 0o600})
const rsaJwkFile = join(dir, 'rsa.jwk.json')
writeFileSync(
  rsaJwkFile,
  JSON.stringify({...rsa.privateKey.export({format: 'jwk'}), kid: 'ci-rsa-1'}),
  {mode: 0o600},
)

describe('client credentials toward the remote server, against a real oidc-provider', () => {
  let idp: OidcProviderFixture
  let http: OAuthHttp
  before(async () => {
    const jwtClient = (id: string, jwk: object) => ({
      client_id: id,
      token_endpoint_auth_method: 'private_key_jwt',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      jwks: {keys: [jwk]},
    })
    idp = await startOidcProvider({
      audience: RESOURCE,
      clients: [
        jwtClient('ci-ec', {...ec.publicKey.export({format: 'jwk'}), alg: 'ES256'}),
        jwtClient('ci-rsa', {
          ...rsa.publicKey.export({format: 'jwk'}),
          kid: 'ci-rsa-1',
          alg: 'RS256',
        }),
      ] as never,
    })
    http = createOAuthHttp({allowPrivateLearned: true})
  })
  after(async () => {
    await http.close()
    await idp.close()
  })

  function source(clientId: string, credential: ClientCredential, now?: () => number) {
    return new ClientCredentialsTokenSource(
      {clientId, credential, resource: RESOURCE},
      {
        server: () =>
          resolveServer({targetUri: new URL(RESOURCE), issuer: new URL(idp.issuer)}, http),
        fetch: () => http.trusted,
        ...(now ? {now} : {}),
      },
    )
  }

  it('gets a token with client_secret_basic, caches it, and fetches a fresh one after a 401', async () => {
    const s = source(idp.client.clientId, {
      kind: 'client_secret_basic',
      secret: idp.client.clientSecret,
    })
    const [a, b, c] = await Promise.all([s.getToken(), s.getToken(), s.getToken()])
    assert.equal(a, b)
    assert.equal(b, c)
    assert.equal(s.stats.grants, 1, 'concurrent callers share one grant request')
    assert.equal(decodeJwt(a).aud, RESOURCE, 'RFC 8707 resource is the audience')
    assert.equal(await s.getToken(), a, 'cached until shortly before expiry')
    const fresh = await s.onUnauthorized(a)
    assert.ok(fresh && fresh !== a)
    assert.equal(s.stats.grants, 2, 'one fresh grant for the rejected token')
    assert.equal(
      await s.onUnauthorized(a),
      fresh,
      'a second 401 for the old token reuses the new one',
    )
    assert.equal(s.stats.grants, 2)
  })

  it('replaces a token shortly before it expires', async () => {
    let clock = Date.now()
    const s = source(
      idp.client.clientId,
      {kind: 'client_secret_basic', secret: idp.client.clientSecret},
      () => clock,
    )
    const first = await s.getToken()
    clock += 3600_000 - 10_000 // 10 s before expiry: inside the 30 s margin
    const second = await s.getToken()
    assert.notEqual(first, second)
    assert.equal(s.stats.grants, 2)
  })

  it('authenticates with private_key_jwt (RFC 7523) from a PEM EC key and from an RSA JWK with kid', async () => {
    const ecKey = await loadClientKey(ecPem)
    const tEc = await source('ci-ec', {kind: 'private_key_jwt', ...ecKey}).getToken()
    assert.equal(decodeJwt(tEc).client_id, 'ci-ec')
    const rsaKey = await loadClientKey(rsaJwkFile)
    assert.equal(rsaKey.kid, 'ci-rsa-1')
    const tRsa = await source('ci-rsa', {kind: 'private_key_jwt', ...rsaKey}).getToken()
    assert.equal(decodeJwt(tRsa).client_id, 'ci-rsa')
  })

  it('a wrong secret is a clear error that never shows the secret', async () => {
    const secret = 'wrong-secret-value-DO-NOT-PRINT'
    const s = source(idp.client.clientId, {kind: 'client_secret_basic', secret})
    await assert.rejects(s.getToken(), (err: Error & {code?: string}) => {
      assert.equal(err.code, 'ERR_NO_UPSTREAM_TOKEN')
      assert.match(err.message, /client credentials grant/)
      assert.match(err.message, /invalid_client/)
      assert.ok(!err.message.includes(secret))
      return true
    })
    assert.equal(await s.onUnauthorized('x'), undefined, 'no token to retry with')
  })

  it('a key signed by the wrong key pair is refused by the provider', async () => {
    const other = await loadClientKey(ecPem)
    await assert.rejects(source('ci-rsa', {kind: 'private_key_jwt', key: other.key}).getToken(), {
      code: 'ERR_NO_UPSTREAM_TOKEN',
    })
  })

  it('refuses key files that are missing, public, or not keys, without echoing their content', async () => {
    await assert.rejects(loadClientKey(join(dir, 'nope.pem')), /cannot read .*nope\.pem \(ENOENT\)/)
    const pub = join(dir, 'pub.pem')
    writeFileSync(pub, ec.publicKey.export({format: 'pem', type: 'spki'}))
    await assert.rejects(loadClientKey(pub), {code: 'ERR_USAGE'})
    const pubJwk = join(dir, 'pub.json')
    writeFileSync(pubJwk, JSON.stringify(ec.publicKey.export({format: 'jwk'})))
    await assert.rejects(loadClientKey(pubJwk), /holds no private key/)
    const garbage = join(dir, 'garbage.pem')
    writeFileSync(garbage, 'SECRET-LOOKING-CONTENT-1234')
    await assert.rejects(loadClientKey(garbage), (err: Error) => {
      assert.match(err.message, /not a private key in PEM or JWK form/)
      assert.ok(!err.message.includes('SECRET-LOOKING-CONTENT'))
      return true
    })
  })
})
