/**
 * Rate limits of `toolgate serve` (issue 36): a token bucket per principal (per client address
 * without a token). A burst gets 429 with Retry-After; another principal is unaffected; the
 * bucket refills; /metrics counts the refusals. Unit part: the bucket arithmetic and its bound
 * on memory under a flood of distinct keys.
 */
import {after, before, describe, test} from 'node:test'
import assert from 'node:assert/strict'
import {rmSync} from 'node:fs'
import {setTimeout as sleep} from 'node:timers/promises'
import {startOidcProvider, type OidcProviderFixture} from '../helpers/oidc-provider.ts'
import {
  getJson,
  startServe,
  tempDir,
  writeConfig,
  type ServeProcess,
} from '../helpers/serve-process.ts'
import {RateLimiter} from '../../src/lib/server/rate-limit.ts'
import {validateServeConfig} from '../../src/lib/config/serve-config.ts'

const LIST = '/registry/default/v0.1/servers'

describe('serve: rate limits per principal', () => {
  let op: OidcProviderFixture
  let s: ServeProcess
  let dir: string
  const tokens: Record<string, string> = {}

  before(async () => {
    op = await startOidcProvider({audience: 'api://registry'})
    dir = tempDir()
    writeConfig(
      dir,
      'servers.json',
      JSON.stringify([{name: 'io.x/a', version: '1.0.0', description: 'a'}]),
    )
    const config = writeConfig(
      dir,
      'serve.json',
      JSON.stringify({
        sources: [
          {name: 'local', file: {path: './servers.json'}},
          {name: 'team', managed: {}},
        ],
        rateLimits: {read: {rate: '2/s', burst: 3}, publish: {rate: '1/m', burst: 1}},
        auth: {
          oauth: {
            resourceUrl: 'https://registry.example.test',
            publicPaths: ['/registry/default/v0.1/servers'],
            providers: [
              {name: 'op', issuerUrl: op.issuer, audience: 'api://registry', allowPrivateIP: true},
            ],
          },
        },
      }),
    )
    s = await startServe(['--config', config], {dir})
    tokens.alice = await op.issueAccessToken({sub: 'alice'})
    tokens.bob = await op.issueAccessToken({sub: 'bob'})
  })

  after(async () => {
    await s?.stop()
    await op?.close()
    if (dir) rmSync(dir, {recursive: true, force: true})
  })

  const get = (token?: string) =>
    getJson(s.url + LIST, {headers: token ? {authorization: `Bearer ${token}`} : {}})

  test('a burst gets 429 with Retry-After; another principal is unaffected; it refills', async () => {
    const alice = []
    for (let i = 0; i < 5; i++) alice.push(await get(tokens.alice))
    assert.deepEqual(
      alice.map((r) => r.status),
      [200, 200, 200, 429, 429],
    )
    const refused = alice[3]!
    assert.equal(refused.headers.get('retry-after'), '1')
    assert.deepEqual(refused.body, {error: 'rate limit exceeded; retry after 1 s'})
    // A second token of the same subject is the same principal: no fresh bucket.
    const again = await op.issueAccessToken({sub: 'alice'})
    assert.equal((await get(again)).status, 429)
    // Bob has his own bucket.
    const bob = []
    for (let i = 0; i < 3; i++) bob.push((await get(tokens.bob)).status)
    assert.deepEqual(bob, [200, 200, 200])
    // Without a token (a public path): the client address is the key.
    const anon = []
    for (let i = 0; i < 4; i++) anon.push((await get()).status)
    assert.deepEqual(anon, [200, 200, 200, 429])
    await sleep(1100)
    assert.equal((await get(tokens.alice)).status, 200, 'refilled after Retry-After')
  })

  test('publishing has its own, stricter bucket', async () => {
    const body = JSON.stringify({name: 'io.x/b', description: 'b', version: '1.0.0'})
    const post = () =>
      getJson(`${s.url}/registry/default/v0.1/publish`, {
        method: 'POST',
        headers: {authorization: `Bearer ${tokens.bob}`, 'content-type': 'application/json'},
        body,
      })
    // No policy permits publishing: the first is a 403, the second never reaches the policy.
    assert.equal((await post()).status, 403)
    const second = await post()
    assert.equal(second.status, 429)
    assert.equal(second.headers.get('retry-after'), '60')
    assert.equal((await get(tokens.bob)).status, 200, 'reads are a different bucket')
  })

  test('/metrics counts the refusals by kind', async () => {
    const m = await fetch(`${s.internalUrl}/metrics`)
    const text = await m.text()
    const read = /^toolgate_rate_limited_total\{kind="read"\} (\d+)$/m.exec(text)
    const publish = /^toolgate_rate_limited_total\{kind="publish"\} (\d+)$/m.exec(text)
    assert.equal(Number(read?.[1]), 4)
    assert.equal(Number(publish?.[1]), 1)
  })
})

test('token bucket: burst, refill, retry-after, and bounded keys', () => {
  let now = 0
  const limiter = new RateLimiter({perSecond: 0.5, burst: 2}, {maxKeys: 100, now: () => now})
  assert.equal(limiter.take('k').ok, true)
  assert.equal(limiter.take('k').ok, true)
  assert.deepEqual(limiter.take('k'), {ok: false, retryAfterSeconds: 2})
  now = 1000
  assert.deepEqual(limiter.take('k'), {ok: false, retryAfterSeconds: 1})
  now = 2000
  assert.equal(limiter.take('k').ok, true)
  // A flood of distinct keys: memory stays bounded, and a key seen recently keeps its state.
  for (let i = 0; i < 10_000; i++) limiter.take(`flood-${i}`)
  assert.ok(limiter.size <= 100, `size ${limiter.size}`)
})

test('rateLimits in serve.yaml: defaults, and every mistake named', () => {
  const base = {auth: {mode: 'anonymous'}}
  const opts = {defaultDbPath: '/tmp/x.db'}
  const plain = validateServeConfig(base, opts)
  assert.equal(plain.rateLimits.read, undefined, 'reads are not limited unless configured')
  assert.deepEqual(plain.rateLimits.publish, {perSecond: 1, burst: 20})
  const set = validateServeConfig({...base, rateLimits: {read: {rate: '600/m'}}}, opts)
  assert.deepEqual(set.rateLimits.read, {perSecond: 10, burst: 10})
  assert.throws(
    () => validateServeConfig({...base, rateLimits: {read: {rate: 'fast', burst: 0}}}, opts),
    (err: Error) =>
      /rateLimits\.read\.rate: "fast" is not a rate/.test(err.message) &&
      /rateLimits\.read\.burst: must be an integer/.test(err.message),
  )
  assert.throws(
    () => validateServeConfig({...base, rateLimits: {write: {}}}, opts),
    /rateLimits\.write: unknown key/,
  )
})
