import {after, before, test} from 'node:test'
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {createAuthenticator} from '../../../src/lib/auth/index.ts'
import type {AuthOutcome, OAuthConfig, ProviderConfig} from '../../../src/lib/auth/types.ts'
import {isToolgateError} from '../../../src/lib/errors.ts'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {
  OPAQUE_RESOURCE,
  providerConfigOf,
  startOidcProvider,
  type OidcProviderFixture,
} from '../../helpers/oidc-provider.ts'

let a: OidcProviderFixture
let b: OidcProviderFixture
let dir: string

before(async () => {
  a = await startOidcProvider()
  b = await startOidcProvider({audience: 'api://other'})
  dir = mkdtempSync(join(tmpdir(), 'toolgate-auth-'))
})
after(async () => {
  await a?.close()
  await b?.close()
  rmSync(dir, {recursive: true, force: true})
})

function oauth(providers: ProviderConfig[]): OAuthConfig {
  return {
    resourceUrl: 'http://127.0.0.1/registry',
    realm: 'mcp-registry',
    publicPaths: [],
    providers,
  }
}

function secretFile(name: string, content: string): string {
  const path = join(dir, name)
  writeFileSync(path, content + '\n', {mode: 0o600})
  return path
}

function introspecting(
  fx: OidcProviderFixture,
  overrides: Partial<ProviderConfig> = {},
): ProviderConfig {
  return providerConfigOf(fx, {
    introspectionUrl: fx.introspectionUrl,
    clientId: fx.client.clientId,
    clientSecretFile: secretFile(`secret-${fx.port}`, fx.client.clientSecret),
    ...overrides,
  })
}

function assertAccepted(outcome: AuthOutcome, provider: string, sub: string): void {
  assert.equal(outcome.ok, true, outcome.ok ? '' : `rejected: ${outcome.description}`)
  if (!outcome.ok) return
  assert.equal(outcome.principal.provider, provider)
  assert.equal(outcome.principal.subject, sub)
}

test('accepts JWT access tokens from each of two providers, attributing them to the right one', async (t) => {
  const auth = createAuthenticator(
    oauth([providerConfigOf(a, {name: 'a'}), providerConfigOf(b, {name: 'b'})]),
    {logger: createMemoryLogger()},
  )
  t.after(() => auth.close())
  assertAccepted(
    await auth.authenticate(`Bearer ${await a.issueAccessToken({sub: 'alice'})}`),
    'a',
    'alice',
  )
  assertAccepted(
    await auth.authenticate(`Bearer ${await b.issueAccessToken({sub: 'bob'})}`),
    'b',
    'bob',
  )
  // a real client_credentials grant over HTTP: RFC 9068 sub = client id
  assertAccepted(
    await auth.authenticate(`Bearer ${await a.clientCredentialsToken()}`),
    'a',
    a.client.clientId,
  )
})

test('accepts a token through an explicit jwksUrl without discovery', async (t) => {
  const auth = createAuthenticator(oauth([providerConfigOf(a, {name: 'a', jwksUrl: a.jwksUrl})]), {
    logger: createMemoryLogger(),
  })
  t.after(() => auth.close())
  const before = a.requests.filter((r) =>
    r.path.startsWith('/.well-known/openid-configuration'),
  ).length
  assertAccepted(
    await auth.authenticate(`Bearer ${await a.issueAccessToken({sub: 'carol'})}`),
    'a',
    'carol',
  )
  assert.equal(
    a.requests.filter((r) => r.path.startsWith('/.well-known/openid-configuration')).length,
    before,
  )
})

test('accepts opaque tokens through RFC 7662 introspection with Basic client authentication', async (t) => {
  const auth = createAuthenticator(oauth([introspecting(a, {name: 'a'})]), {
    logger: createMemoryLogger(),
  })
  t.after(() => auth.close())
  assertAccepted(
    await auth.authenticate(`Bearer ${await a.issueAccessToken({sub: 'dave', format: 'opaque'})}`),
    'a',
    'dave',
  )
})

test('refuses an opaque token whose introspection audience is not the configured audience', async (t) => {
  const auth = createAuthenticator(
    oauth([introspecting(a, {name: 'a', audience: 'api://someone-else'})]),
    {logger: createMemoryLogger()},
  )
  t.after(() => auth.close())
  const outcome = await auth.authenticate(`Bearer ${await a.issueAccessToken({format: 'opaque'})}`)
  assert.deepEqual(outcome, {
    ok: false,
    error: 'invalid_token',
    description: 'invalid token',
    reason: 'aud_mismatch',
  })
})

test('refuses an opaque client_credentials token: introspection gives no sub (contract §2)', async (t) => {
  const auth = createAuthenticator(oauth([introspecting(a, {name: 'a'})]), {
    logger: createMemoryLogger(),
  })
  t.after(() => auth.close())
  const outcome = await auth.authenticate(
    `Bearer ${await a.clientCredentialsToken({resource: OPAQUE_RESOURCE})}`,
  )
  assert.equal(outcome.ok, false)
})

test('an opaque token is tried against every introspecting provider in order; the issuer wins', async (t) => {
  const auth = createAuthenticator(
    oauth([introspecting(b, {name: 'b', audience: a.audience}), introspecting(a, {name: 'a'})]),
    {logger: createMemoryLogger()},
  )
  t.after(() => auth.close())
  assertAccepted(
    await auth.authenticate(`Bearer ${await a.issueAccessToken({sub: 'erin', format: 'opaque'})}`),
    'a',
    'erin',
  )
})

test("never accepts provider B's tokens with a configuration that lists only provider A", async (t) => {
  const auth = createAuthenticator(
    oauth([introspecting(a, {name: 'a', audience: 'api://other'})]),
    {logger: createMemoryLogger()},
  )
  t.after(() => auth.close())
  const tokens = [
    await b.issueAccessToken({audience: 'api://other'}),
    await b.issueAccessToken({audience: 'api://other', format: 'opaque'}),
    await b.clientCredentialsToken(),
    await b.signJwt({
      iss: a.issuer,
      aud: 'api://other',
      sub: 'mallory',
      exp: Math.floor(Date.now() / 1000) + 600,
    }),
  ]
  for (const token of tokens) {
    const outcome = await auth.authenticate(`Bearer ${token}`)
    assert.equal(outcome.ok, false)
  }
})

test('caches acceptances: a repeated token is not introspected again until the introspection TTL passes', async (t) => {
  let clock = Date.now()
  const auth = createAuthenticator(oauth([introspecting(a, {name: 'a'})]), {
    logger: createMemoryLogger(),
    now: () => clock,
    introspectionCacheTtlMs: 30_000,
  })
  t.after(() => auth.close())
  const token = await a.issueAccessToken({format: 'opaque'})
  const count = () => a.requests.filter((r) => r.path === '/token/introspection').length
  const start = count()
  for (let i = 0; i < 5; i++) assert.equal((await auth.authenticate(`Bearer ${token}`)).ok, true)
  assert.equal(count() - start, 1)
  clock += 31_000
  assert.equal((await auth.authenticate(`Bearer ${token}`)).ok, true)
  assert.equal(count() - start, 2)
})

test('a cached acceptance ends at the token exp', async (t) => {
  let clock = Date.now()
  const auth = createAuthenticator(oauth([providerConfigOf(a, {name: 'a'})]), {
    logger: createMemoryLogger(),
    now: () => clock,
  })
  t.after(() => auth.close())
  const token = await a.issueAccessToken({expiresIn: 60})
  assert.equal((await auth.authenticate(`Bearer ${token}`)).ok, true)
  clock += 61_000
  assert.deepEqual(await auth.authenticate(`Bearer ${token}`), {
    ok: false,
    error: 'invalid_token',
    description: 'token expired',
    reason: 'expired',
  })
})

test('key rotation at the provider while running: a token with the new kid is accepted without restart', async (t) => {
  const fx = await startOidcProvider()
  t.after(() => fx.close())
  const auth = createAuthenticator(oauth([providerConfigOf(fx, {name: 'rot'})]), {
    logger: createMemoryLogger(),
    jwksCooldownMs: 200,
  })
  t.after(() => auth.close())
  assertAccepted(
    await auth.authenticate(`Bearer ${await fx.issueAccessToken({sub: 'before'})}`),
    'rot',
    'before',
  )
  const oldKid = fx.signingKey.kid
  await fx.rotateKeys()
  assert.notEqual(fx.signingKey.kid, oldKid)
  await new Promise((r) => setTimeout(r, 300))
  assertAccepted(
    await auth.authenticate(`Bearer ${await fx.issueAccessToken({sub: 'after'})}`),
    'rot',
    'after',
  )
})

test('an unknown kid causes at most one JWKS refetch per cooldown', async (t) => {
  const fx = await startOidcProvider()
  t.after(() => fx.close())
  const auth = createAuthenticator(
    oauth([providerConfigOf(fx, {name: 'cd', jwksUrl: fx.jwksUrl})]),
    {logger: createMemoryLogger(), jwksCooldownMs: 60_000},
  )
  t.after(() => auth.close())
  assert.equal((await auth.authenticate(`Bearer ${await fx.issueAccessToken()}`)).ok, true)
  const jwksFetches = () => fx.requests.filter((r) => r.path === '/jwks').length
  const start = jwksFetches()
  for (let i = 0; i < 10; i++) {
    const forged = await fx.signJwt(
      {iss: fx.issuer, aud: fx.audience, sub: 'x', exp: Math.floor(Date.now() / 1000) + 60},
      {kid: `unknown-${i}`},
    )
    assert.equal((await auth.authenticate(`Bearer ${forged}`)).ok, false)
  }
  assert.ok(jwksFetches() - start <= 1, `refetched ${jwksFetches() - start} times`)
})

test('startup fails naming the provider when clientSecretFile or authTokenFile cannot be read', () => {
  for (const field of ['clientSecretFile', 'authTokenFile'] as const) {
    assert.throws(
      () =>
        createAuthenticator(
          oauth([
            providerConfigOf(a, {name: 'corp', clientId: 'c', [field]: join(dir, 'missing')}),
          ]),
          {logger: createMemoryLogger()},
        ),
      (err: unknown) =>
        isToolgateError(err, 'ERR_FILE_UNREADABLE') &&
        /providers\[0\]/.test(err.message) &&
        /corp/.test(err.message),
    )
  }
})

test('startup fails with the field path for a provider URL that is not a URL', () => {
  assert.throws(
    () =>
      createAuthenticator(
        oauth([providerConfigOf(a), providerConfigOf(b, {jwksUrl: 'not a url'})]),
        {logger: createMemoryLogger()},
      ),
    (err: unknown) =>
      isToolgateError(err, 'ERR_CONFIG_INVALID') &&
      err.message.startsWith('auth.oauth.providers[1].jwksUrl'),
  )
})
