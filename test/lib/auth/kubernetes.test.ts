import {after, before, test} from 'node:test'
import assert from 'node:assert/strict'
import {createServer, type Server} from 'node:https'
import {writeFileSync} from 'node:fs'
import type {AddressInfo} from 'node:net'
import {join} from 'node:path'
import {exportJWK, generateKeyPair, SignJWT} from 'jose'
import {createAuthenticator} from '../../../src/lib/auth/index.ts'
import type {ProviderConfig} from '../../../src/lib/auth/types.ts'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {createTestPki, type TestPki} from '../../helpers/tls.ts'

/**
 * Kubernetes service-account tokens (spec "Token handling" 8, contract §1): the API server's JWKS
 * endpoint is reached over TLS with the cluster CA, on a private address, and only answers to a
 * bearer token (the pod's own projected token). The API server itself cannot run here, so this
 * local HTTPS server plays its /openid/v1/jwks endpoint; the tokens are signed the way kube-apiserver
 * signs them (RS256, kid, iss = cluster issuer, aud = the requested audience).
 */
const ISSUER = 'https://kubernetes.default.svc.cluster.local'
const AUDIENCE = 'toolgate-registry'
let pki: TestPki
let server: Server
let jwksUrl: string
let tokenFile: string
let expectedBearer = 'pod-token-v1'
let sign: (claims: Record<string, unknown>) => Promise<string>
const seen: Array<string | undefined> = []

before(async () => {
  pki = createTestPki()
  const {privateKey, publicKey} = await generateKeyPair('RS256')
  const jwk = {...(await exportJWK(publicKey)), kid: 'k8s-key-1', alg: 'RS256', use: 'sig'}
  sign = (claims) =>
    new SignJWT(claims).setProtectedHeader({alg: 'RS256', kid: 'k8s-key-1'}).sign(privateKey)
  server = createServer({cert: pki.cert, key: pki.key}, (req, res) => {
    seen.push(req.headers.authorization)
    if (req.url !== '/openid/v1/jwks') return void res.writeHead(404).end()
    if (req.headers.authorization !== `Bearer ${expectedBearer}`)
      return void res.writeHead(401).end('{"kind":"Status","code":401}')
    res
      .writeHead(200, {'content-type': 'application/jwk-set+json'})
      .end(JSON.stringify({keys: [jwk]}))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  jwksUrl = `https://127.0.0.1:${(server.address() as AddressInfo).port}/openid/v1/jwks`
  tokenFile = join(pki.dir, 'token')
  writeFileSync(tokenFile, expectedBearer + '\n', {mode: 0o600})
})
after(async () => {
  server?.closeAllConnections()
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()))
  pki?.cleanup()
})

const serviceAccountClaims = () => ({
  iss: ISSUER,
  aud: [AUDIENCE],
  sub: 'system:serviceaccount:agents:mcp-client',
  exp: Math.floor(Date.now() / 1000) + 3600,
  iat: Math.floor(Date.now() / 1000),
  nbf: Math.floor(Date.now() / 1000) - 5,
  'kubernetes.io': {namespace: 'agents', serviceaccount: {name: 'mcp-client', uid: 'u-1'}},
})

function provider(overrides: Partial<ProviderConfig> = {}): ProviderConfig {
  return {
    name: 'kubernetes',
    issuerUrl: ISSUER,
    audience: AUDIENCE,
    jwksUrl,
    caCertPath: pki.caCertPath,
    authTokenFile: tokenFile,
    allowPrivateIP: true,
    ...overrides,
  }
}

async function run(cfg: ProviderConfig, token: string) {
  const logger = createMemoryLogger()
  const auth = createAuthenticator(
    {
      resourceUrl: 'https://registry.example',
      realm: 'mcp-registry',
      publicPaths: [],
      providers: [cfg],
    },
    {logger},
  )
  try {
    return {outcome: await auth.authenticate(`Bearer ${token}`), lines: logger.lines}
  } finally {
    await auth.close()
  }
}

test('accepts a service-account token: private CA, bearer-protected JWKS, allowPrivateIP', async () => {
  const {outcome} = await run(provider(), await sign(serviceAccountClaims()))
  assert.equal(outcome.ok, true, outcome.ok ? '' : outcome.description)
  if (outcome.ok) assert.equal(outcome.principal.subject, 'system:serviceaccount:agents:mcp-client')
  assert.equal(seen.at(-1), `Bearer ${expectedBearer}`)
})

test('without allowPrivateIP the JWKS host is refused, with a clear log line', async () => {
  const {outcome, lines} = await run(
    provider({allowPrivateIP: false}),
    await sign(serviceAccountClaims()),
  )
  assert.equal(outcome.ok, false)
  assert.ok(
    lines.some(
      (l) =>
        /provider=kubernetes/.test(l) &&
        /127\.0\.0\.1 refused: loopback address is not allowed; set allowPrivateIP/.test(l),
    ),
    lines.join('\n'),
  )
})

test('without caCertPath TLS verification fails, with a clear log line', async () => {
  const {outcome, lines} = await run(
    provider({caCertPath: undefined}),
    await sign(serviceAccountClaims()),
  )
  assert.equal(outcome.ok, false)
  assert.ok(
    lines.some(
      (l) =>
        /provider=kubernetes/.test(l) && /failed TLS verification/.test(l) && /caCertPath/.test(l),
    ),
    lines.join('\n'),
  )
})

test('without authTokenFile the JWKS endpoint answers 401 and the token is refused', async () => {
  const {outcome, lines} = await run(
    provider({authTokenFile: undefined}),
    await sign(serviceAccountClaims()),
  )
  assert.equal(outcome.ok, false)
  assert.ok(
    lines.some((l) => /provider=kubernetes/.test(l) && /unavailable/.test(l)),
    lines.join('\n'),
  )
})

test('a token for another audience or issuer is refused', async () => {
  assert.equal(
    (
      await run(
        provider(),
        await sign({...serviceAccountClaims(), aud: ['https://kubernetes.default.svc']}),
      )
    ).outcome.ok,
    false,
  )
  assert.equal(
    (
      await run(
        provider(),
        await sign({...serviceAccountClaims(), iss: 'https://kubernetes.default.svc'}),
      )
    ).outcome.ok,
    false,
  )
})

test('the authTokenFile is re-read when the kubelet rotates it', async () => {
  const logger = createMemoryLogger()
  const auth = createAuthenticator(
    {
      resourceUrl: 'https://registry.example',
      realm: 'mcp-registry',
      publicPaths: [],
      providers: [provider()],
    },
    {logger, jwksCacheMaxAgeMs: 0, jwksCooldownMs: 0},
  )
  try {
    assert.equal((await auth.authenticate(`Bearer ${await sign(serviceAccountClaims())}`)).ok, true)
    expectedBearer = 'pod-token-v2'
    writeFileSync(tokenFile, expectedBearer + '\n')
    assert.equal(
      (
        await auth.authenticate(
          `Bearer ${await sign({...serviceAccountClaims(), sub: 'system:serviceaccount:agents:other'})}`,
        )
      ).ok,
      true,
    )
    assert.equal(seen.at(-1), 'Bearer pod-token-v2')
  } finally {
    expectedBearer = 'pod-token-v1'
    writeFileSync(tokenFile, expectedBearer + '\n')
    await auth.close()
  }
})

test('the projected token never appears in a log line', async () => {
  const {lines} = await run(provider({allowPrivateIP: false}), await sign(serviceAccountClaims()))
  assert.ok(lines.length > 0)
  for (const l of lines) assert.ok(!l.includes(expectedBearer), l)
})
