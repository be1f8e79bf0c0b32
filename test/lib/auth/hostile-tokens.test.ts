import {after, before, test} from 'node:test'
import assert from 'node:assert/strict'
import {createHmac, createPrivateKey, createPublicKey, sign} from 'node:crypto'
import {exportJWK, generateKeyPair, SignJWT, type JWK} from 'jose'
import {createAuthenticator} from '../../../src/lib/auth/index.ts'
import type {BearerAuthenticator} from '../../../src/lib/auth/types.ts'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {
  providerConfigOf,
  startOidcProvider,
  type OidcProviderFixture,
} from '../../helpers/oidc-provider.ts'

/**
 * The hostile-token table of issue 3: every case is answered 401 (ok: false), never an exception
 * or a hang. Provider A is a real oidc-provider; B is a second real provider whose key plays the
 * attacker that owns a different, legitimate key.
 */
let a: OidcProviderFixture
let b: OidcProviderFixture
let auth: BearerAuthenticator
let logger: ReturnType<typeof createMemoryLogger>
let attacker: {privateKey: CryptoKey; jwk: JWK}
const now = () => Math.floor(Date.now() / 1000)
const b64 = (v: unknown) =>
  Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url')

before(async () => {
  a = await startOidcProvider()
  b = await startOidcProvider()
  logger = createMemoryLogger('debug')
  auth = createAuthenticator(
    {
      resourceUrl: 'http://127.0.0.1/r',
      realm: 'mcp-registry',
      publicPaths: [],
      providers: [providerConfigOf(a, {name: 'a'})],
    },
    {logger, jwksCooldownMs: 60_000},
  )
  const kp = await generateKeyPair('RS256', {extractable: true})
  attacker = {privateKey: kp.privateKey, jwk: await exportJWK(kp.publicKey)}
})
after(async () => {
  await auth?.close()
  await a?.close()
  await b?.close()
})

const good = () => ({iss: a.issuer, aud: a.audience, sub: 'alice', exp: now() + 600, iat: now()})
const signA = (payload: Record<string, unknown>, header: Record<string, unknown> = {}) =>
  a.signJwt(payload, header)
const rsaPublicPem = () =>
  createPublicKey({
    key: {
      ...a.signingKey,
      d: undefined,
      p: undefined,
      q: undefined,
      dp: undefined,
      dq: undefined,
      qi: undefined,
    } as never,
    format: 'jwk',
  }).export({type: 'spki', format: 'pem'}) as string
const hs256 = (
  payload: Record<string, unknown>,
  secret: string | Buffer,
  header: Record<string, unknown> = {},
) => {
  const input = `${b64({alg: 'HS256', typ: 'JWT', ...header})}.${b64(payload)}`
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`
}
/** RS256 with the provider's real key, built by hand so headers jose refuses to emit can be tested. */
const rs256Raw = (header: Record<string, unknown>, payload: Record<string, unknown>) => {
  const input = `${b64({alg: 'RS256', kid: a.signingKey.kid, ...header})}.${b64(payload)}`
  const key = createPrivateKey({key: a.signingKey as never, format: 'jwk'})
  return `${input}.${sign('sha256', Buffer.from(input), key).toString('base64url')}`
}
const attackerSigned = (payload: Record<string, unknown>, header: Record<string, unknown>) =>
  new SignJWT(payload).setProtectedHeader({alg: 'RS256', ...header}).sign(attacker.privateKey)

type Case = [
  name: string,
  header: () => Promise<string | string[] | undefined> | string | string[] | undefined,
  expected: 'invalid_request' | 'invalid_token',
]
const bearer = async (token: Promise<string> | string) => `Bearer ${await token}`

const cases: Case[] = [
  [
    'alg none with an empty signature',
    () => bearer(`${b64({alg: 'none'})}.${b64(good())}.`),
    'invalid_token',
  ],
  [
    'alg none with a signature segment',
    () => bearer(`${b64({alg: 'none', kid: a.signingKey.kid})}.${b64(good())}.c2ln`),
    'invalid_token',
  ],
  [
    'alg "None" spelled differently',
    () => bearer(`${b64({alg: 'None'})}.${b64(good())}.`),
    'invalid_token',
  ],
  [
    'HS256 signed with the provider RSA public key (PEM)',
    () => bearer(hs256(good(), rsaPublicPem())),
    'invalid_token',
  ],
  [
    'HS256 with the provider kid, keyed by its public modulus',
    () => bearer(hs256(good(), String(a.signingKey.n), {kid: a.signingKey.kid})),
    'invalid_token',
  ],
  [
    'unknown kid signed by an unrelated key',
    () => bearer(attackerSigned(good(), {kid: 'no-such-kid'})),
    'invalid_token',
  ],
  [
    "signed by another provider's key but claiming this issuer",
    () => bearer(b.signJwt(good())),
    'invalid_token',
  ],
  [
    "another provider's key using this provider's kid",
    () => bearer(b.signJwt(good(), {kid: a.signingKey.kid})),
    'invalid_token',
  ],
  ['attacker key without kid', () => bearer(attackerSigned(good(), {})), 'invalid_token'],
  [
    'attacker key embedded in a jwk header',
    () => bearer(attackerSigned(good(), {jwk: attacker.jwk})),
    'invalid_token',
  ],
  [
    'attacker jku header',
    () => bearer(attackerSigned(good(), {jku: 'http://127.0.0.1:1/jwks', kid: 'evil'})),
    'invalid_token',
  ],
  ['expired an hour ago', () => bearer(signA({...good(), exp: now() - 3600})), 'invalid_token'],
  ['expired one second ago', () => bearer(signA({...good(), exp: now() - 1})), 'invalid_token'],
  ['nbf in the future', () => bearer(signA({...good(), nbf: now() + 600})), 'invalid_token'],
  [
    'missing exp',
    () => bearer(signA({iss: a.issuer, aud: a.audience, sub: 'alice'})),
    'invalid_token',
  ],
  ['exp as a string', () => bearer(signA({...good(), exp: String(now() + 600)})), 'invalid_token'],
  [
    'iss with an extra trailing slash',
    () => bearer(signA({...good(), iss: a.issuer + '/'})),
    'invalid_token',
  ],
  [
    'iss in different case',
    () => bearer(signA({...good(), iss: a.issuer.toUpperCase()})),
    'invalid_token',
  ],
  [
    'iss with an extra path',
    () => bearer(signA({...good(), iss: a.issuer + '/tenant'})),
    'invalid_token',
  ],
  [
    'iss missing',
    () => bearer(signA({aud: a.audience, sub: 'alice', exp: now() + 600})),
    'invalid_token',
  ],
  [
    'iss with a trailing space',
    () => bearer(signA({...good(), iss: a.issuer + ' '})),
    'invalid_token',
  ],
  ['aud mismatch', () => bearer(signA({...good(), aud: 'api://other'})), 'invalid_token'],
  [
    'aud array without the audience',
    () => bearer(signA({...good(), aud: ['api://x', 'api://y']})),
    'invalid_token',
  ],
  [
    'aud missing',
    () => bearer(signA({iss: a.issuer, sub: 'alice', exp: now() + 600})),
    'invalid_token',
  ],
  [
    'aud differing in case',
    () => bearer(signA({...good(), aud: a.audience.toUpperCase()})),
    'invalid_token',
  ],
  [
    'sub missing',
    () => bearer(signA({iss: a.issuer, aud: a.audience, exp: now() + 600})),
    'invalid_token',
  ],
  ['sub empty', () => bearer(signA({...good(), sub: ''})), 'invalid_token'],
  ['sub a number', () => bearer(signA({...good(), sub: 42})), 'invalid_token'],
  [
    'payload tampered after signing',
    async () => {
      const [h, , s] = (await signA(good())).split('.')
      return bearer(`${h}.${b64({...good(), sub: 'admin'})}.${s}`)
    },
    'invalid_token',
  ],
  [
    'signature taken from another valid token',
    async () => {
      const [h1, p1] = (await signA({...good(), sub: 'one'})).split('.')
      const [, , s2] = (await signA({...good(), sub: 'two'})).split('.')
      return bearer(`${h1}.${p1}.${s2}`)
    },
    'invalid_token',
  ],
  [
    'control for the hand-built signer: same token without crit is accepted',
    () => bearer(rs256Raw({}, good())),
    'accepted' as never,
  ],
  [
    'signature of garbage',
    () => bearer(`${b64({alg: 'RS256', kid: a.signingKey.kid})}.${b64(good())}.${b64('garbage')}`),
    'invalid_token',
  ],
  [
    'unknown critical header',
    () => bearer(rs256Raw({crit: ['x-unknown'], 'x-unknown': 1}, good())),
    'invalid_token',
  ],
  [
    'malformed base64 segments',
    () => 'Bearer eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOi.@@@',
    'invalid_request',
  ],
  ['valid charset but not base64 JSON', () => 'Bearer AAAA.BBBB.CCCC', 'invalid_token'],
  ['three segments of garbage', () => 'Bearer x.y.z', 'invalid_token'],
  ['five segments (JWE shape)', () => 'Bearer a.b.c.d.e', 'invalid_token'],
  ['a 64 KB token', () => 'Bearer ' + 'A'.repeat(64 * 1024), 'invalid_token'],
  [
    'a 64 KB JWT-shaped token',
    async () => bearer(signA({...good(), pad: 'x'.repeat(64 * 1024)})),
    'invalid_token',
  ],
  [
    'opaque token with no introspection configured',
    () => 'Bearer abcdefghijklmnopqrstuvwxyz012345',
    'invalid_token',
  ],
  ['lower-case scheme: bearer x', () => 'bearer abc', 'invalid_request'],
  ['two spaces: Bearer  x', () => 'Bearer  abc', 'invalid_request'],
  ['quoted token: Bearer "x"', () => 'Bearer "abc"', 'invalid_request'],
  ['scheme only: Bearer', () => 'Bearer', 'invalid_request'],
  ['scheme and space only', () => 'Bearer ', 'invalid_request'],
  [
    'Basic credentials',
    () => 'Basic ' + Buffer.from('user:pass').toString('base64'),
    'invalid_request',
  ],
  ['trailing space', () => 'Bearer abc ', 'invalid_request'],
  ['tab separator', () => 'Bearer\tabc', 'invalid_request'],
  [
    'two Authorization headers, both valid tokens',
    async () => [await bearer(signA(good())), await bearer(signA(good()))],
    'invalid_request',
  ],
  ['no Authorization header', () => undefined, 'invalid_request'],
  ['empty Authorization header', () => '', 'invalid_request'],
]

test('the hostile table has at least 30 cases', () => {
  assert.ok(cases.length >= 30)
})

test('control: a well-formed token signed by the provider key is accepted (so the table can fail)', async () => {
  const outcome = await auth.authenticate(await bearer(signA(good())))
  assert.equal(outcome.ok, true)
})

for (const [name, header, expected] of cases) {
  test(
    (expected as string) === 'accepted' ? name : `rejects ${name} with ${expected}`,
    async () => {
      const outcome = await auth.authenticate(await header())
      if ((expected as string) === 'accepted') return assert.equal(outcome.ok, true)
      assert.equal(outcome.ok, false)
      if (!outcome.ok) assert.equal(outcome.error, expected)
    },
  )
}

test('no token, signature or secret appears in any log line', async () => {
  const secrets = [a.client.clientSecret]
  const tokens = [
    await signA(good()),
    await signA({...good(), exp: now() - 5}),
    await b.signJwt(good()),
  ]
  for (const t of tokens) await auth.authenticate(`Bearer ${t}`)
  assert.ok(logger.lines.length > 0, 'the validator logs at debug level, so this test can fail')
  for (const line of logger.lines) {
    for (const t of tokens) {
      for (const part of t.split('.'))
        assert.ok(!line.includes(part), `log line leaks a token segment: ${line}`)
    }
    for (const s of secrets) assert.ok(!line.includes(s))
  }
})
