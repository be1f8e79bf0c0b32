/**
 * `toolgate auth explain` against the servers it explains: a real oidc-provider (JWTs, and a
 * second provider answering RFC 7662 introspection for opaque tokens), a real `toolgate serve`
 * process and a real `toolgate proxy` process. Every token of the table goes to both servers and
 * through `auth explain` with each server's own configuration (the serve config file; the proxy's
 * --oidc-* flags): the verdict must equal the server's answer, the reason code must equal the one
 * in the server's 401, and the failing check must be the one the row names.
 */
import assert from 'node:assert/strict'
import {createPrivateKey, createHmac, sign} from 'node:crypto'
import {createServer, request, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {exportJWK, generateKeyPair, SignJWT} from 'jose'
import {
  explainToken,
  explanationJson,
  providersFromOidcFlags,
  providersFromServeConfig,
  readBounded,
  readToken,
  type Explanation,
  type ProviderSource,
} from '../../src/lib/auth/explain/index.ts'
import {createAuthenticator} from '../../src/lib/auth/index.ts'
import {createMemoryLogger} from '../../src/lib/log/logger.ts'
import {oauthConfigFromOidc} from '../../src/lib/proxy/incoming-auth.ts'
import {proxyConfigFromFlags} from '../../src/lib/proxy/options.ts'
import {startProxy} from '../../src/lib/proxy/proxy-server.ts'
import {
  OPAQUE_RESOURCE,
  startOidcProvider,
  type OidcProviderFixture,
} from '../helpers/oidc-provider.ts'
import {runCli, runProxy, stop, waitFor, type Run} from '../helpers/proxy-run.ts'
import {FIXTURES, startServe, type ServeProcess} from '../helpers/serve-process.ts'

const AUD = 'api://registry'
const LIST = '/registry/default/v0.1/servers'
let a: OidcProviderFixture
let b: OidcProviderFixture
let serve: ServeProcess
let proxy: Run
let proxyUrl: string
let upstream: Server
let dir: string
let configFile: string
let serveSource: ProviderSource
let proxySource: ProviderSource
let proxyArgs: string[]
const now = () => Math.floor(Date.now() / 1000)
const b64 = (v: unknown) =>
  Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url')

before(async () => {
  a = await startOidcProvider({audience: AUD})
  b = await startOidcProvider({audience: AUD})
  dir = mkdtempSync(join(tmpdir(), 'tg-explain-'))
  writeFileSync(join(dir, 'b-secret'), b.client.clientSecret, {mode: 0o600})
  configFile = join(dir, 'serve.json')
  writeFileSync(
    configFile,
    JSON.stringify({
      sources: [{name: 'fixture', file: {path: join(FIXTURES, 'registry.json')}}],
      registries: [{name: 'default', sources: ['fixture']}],
      auth: {
        oauth: {
          resourceUrl: 'https://registry.example.test',
          providers: [
            {name: 'a', issuerUrl: a.issuer, audience: AUD, allowPrivateIP: true},
            {
              name: 'b',
              issuerUrl: b.issuer,
              audience: AUD,
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
  upstream = createServer((_req, res) =>
    res.writeHead(200, {'content-type': 'text/plain'}).end('ok'),
  )
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r))
  const target = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`
  proxyArgs = ['--oidc-issuer', a.issuer, '--oidc-audience', AUD]
  const home = join(dir, 'home')
  ;[serve, proxyUrl] = await Promise.all([
    startServe(['--config', configFile], {dir}),
    (async () => {
      proxy = runProxy(['p', '--target-uri', target, '--port', '0', '--json', ...proxyArgs], home)
      return waitFor(
        'the proxy to listen',
        () => {
          const line = proxy
            .stdout()
            .split('\n')
            .find((l) => l.startsWith('{'))
          return line ? (JSON.parse(line) as {url: string}).url : undefined
        },
        proxy,
      )
    })(),
  ])
  serveSource = providersFromServeConfig(configFile)
  proxySource = providersFromOidcFlags({issuer: a.issuer, audience: AUD, scopes: []})
})

after(async () => {
  if (proxy) await stop(proxy)
  await serve?.stop()
  upstream?.close()
  await a?.close()
  await b?.close()
  if (dir) rmSync(dir, {recursive: true, force: true})
})

/** One request with the token; status and the reason code of a 401 (from error_description). */
function send(
  base: string,
  path: string,
  token: string,
): Promise<{status: number; code: string | null; description: string}> {
  const u = new URL(base)
  return new Promise((resolve, reject) => {
    const req = request(
      {host: u.hostname, port: u.port, path, headers: {authorization: `Bearer ${token}`}},
      (res) => {
        const challenge = String(res.headers['www-authenticate'] ?? '')
        const description = /error_description="([^"]*)"/.exec(challenge)?.[1] ?? ''
        const code = /\(reason: ([a-z_]+)\)$/.exec(description)?.[1] ?? null
        res.resume()
        res.on('end', () => resolve({status: res.statusCode ?? 0, code, description}))
      },
    )
    req.on('error', reject)
    req.setTimeout(30_000, () => req.destroy(new Error('request timed out')))
    req.end()
  })
}

const explain = (token: string, source: ProviderSource, offline = false) =>
  explainToken(token, {...source, offline, logger: createMemoryLogger('debug')})

const good = () => ({iss: a.issuer, aud: AUD, sub: 'alice', exp: now() + 600, iat: now()})
const without = (key: string) => {
  const p: Record<string, unknown> = good()
  delete p[key]
  return p
}
const rs256Raw = (header: Record<string, unknown>, payload: Record<string, unknown>) => {
  const input = `${b64({alg: 'RS256', kid: a.signingKey.kid, ...header})}.${b64(payload)}`
  const key = createPrivateKey({key: a.signingKey as never, format: 'jwk'})
  return `${input}.${sign('sha256', Buffer.from(input), key).toString('base64url')}`
}
const hs256 = (payload: Record<string, unknown>) => {
  const input = `${b64({alg: 'HS256', typ: 'JWT', kid: a.signingKey.kid})}.${b64(payload)}`
  return `${input}.${createHmac('sha256', 'secret').update(input).digest('base64url')}`
}
const attacker = async (kid: string | undefined) => {
  const kp = await generateKeyPair('RS256', {extractable: true})
  void (await exportJWK(kp.publicKey))
  return new SignJWT(good())
    .setProtectedHeader({alg: 'RS256', ...(kid ? {kid} : {})})
    .sign(kp.privateKey)
}

interface Row {
  name: string
  token: () => Promise<string>
  /** Expected code at serve (providers a, b) and at the proxy (a only, by flags). */
  serve: string | 'accepted'
  proxy: string | 'accepted'
  /** The check explain must name as failing (serve config), when refused. */
  check?: string
}

const ROWS: Row[] = [
  {
    name: 'a JWT issued by the provider',
    token: () => a.issueAccessToken({audience: AUD}),
    serve: 'accepted',
    proxy: 'accepted',
  },
  {
    name: 'a hand-signed good JWT',
    token: () => a.signJwt(good()),
    serve: 'accepted',
    proxy: 'accepted',
  },
  {
    name: 'an opaque token of provider b',
    token: () => b.issueAccessToken({format: 'opaque'}),
    serve: 'accepted',
    proxy: 'opaque_unsupported',
    check: 'provider',
  },
  {
    name: 'a JWT of provider b',
    token: () => b.issueAccessToken({audience: AUD}),
    serve: 'accepted',
    proxy: 'iss_unknown',
    check: 'provider',
  },
  {
    name: 'expired',
    token: () => a.signJwt({...good(), exp: now() - 120}),
    serve: 'expired',
    proxy: 'expired',
    check: 'exp',
  },
  {
    name: 'exp missing',
    token: () => a.signJwt(without('exp')),
    serve: 'exp_missing',
    proxy: 'exp_missing',
    check: 'exp',
  },
  {
    name: 'exp not a number',
    token: () => a.signJwt({...good(), exp: 'tomorrow'}),
    serve: 'exp_invalid',
    proxy: 'exp_invalid',
    check: 'exp',
  },
  {
    name: 'nbf in the future',
    token: () => a.signJwt({...good(), nbf: now() + 3600}),
    serve: 'nbf_future',
    proxy: 'nbf_future',
    check: 'nbf',
  },
  {
    name: 'nbf not a number',
    token: () => a.signJwt({...good(), nbf: 'soon'}),
    serve: 'nbf_invalid',
    proxy: 'nbf_invalid',
    check: 'nbf',
  },
  {
    name: 'iat not a number',
    token: () => a.signJwt({...good(), iat: 'today'}),
    serve: 'iat_invalid',
    proxy: 'iat_invalid',
    check: 'iat',
  },
  {
    name: 'aud of another API',
    token: () => a.signJwt({...good(), aud: 'api://other'}),
    serve: 'aud_mismatch',
    proxy: 'aud_mismatch',
    check: 'aud',
  },
  {
    name: 'aud list without ours',
    token: () => a.signJwt({...good(), aud: ['api://x', 'api://y']}),
    serve: 'aud_mismatch',
    proxy: 'aud_mismatch',
    check: 'aud',
  },
  {
    name: 'aud missing',
    token: () => a.signJwt(without('aud')),
    serve: 'aud_missing',
    proxy: 'aud_missing',
    check: 'aud',
  },
  {
    name: 'aud differing in case',
    token: () => a.signJwt({...good(), aud: AUD.toUpperCase()}),
    serve: 'aud_mismatch',
    proxy: 'aud_mismatch',
    check: 'aud',
  },
  {
    name: 'sub missing',
    token: () => a.signJwt(without('sub')),
    serve: 'sub_missing',
    proxy: 'sub_missing',
    check: 'sub',
  },
  {
    name: 'sub empty',
    token: () => a.signJwt({...good(), sub: ''}),
    serve: 'sub_missing',
    proxy: 'sub_missing',
    check: 'sub',
  },
  {
    name: 'sub a number',
    token: () => a.signJwt({...good(), sub: 42}),
    serve: 'sub_missing',
    proxy: 'sub_missing',
    check: 'sub',
  },
  {
    name: 'iss with a trailing slash',
    token: () => a.signJwt({...good(), iss: a.issuer + '/'}),
    serve: 'iss_unknown',
    proxy: 'iss_unknown',
    check: 'provider',
  },
  {
    name: 'iss with https instead of http',
    token: () => a.signJwt({...good(), iss: a.issuer.replace('http:', 'https:')}),
    serve: 'iss_unknown',
    proxy: 'iss_unknown',
    check: 'provider',
  },
  {
    name: 'iss missing',
    token: () => a.signJwt(without('iss')),
    serve: 'iss_unknown',
    proxy: 'iss_unknown',
    check: 'provider',
  },
  {
    name: 'alg none',
    token: async () => `${b64({alg: 'none'})}.${b64(good())}.`,
    serve: 'alg_not_allowed',
    proxy: 'alg_not_allowed',
    check: 'alg',
  },
  {
    name: 'alg HS256 (key confusion)',
    token: async () => hs256(good()),
    serve: 'alg_not_allowed',
    proxy: 'alg_not_allowed',
    check: 'alg',
  },
  {
    name: 'a kid the JWKS does not have',
    token: () => attacker('no-such-kid'),
    serve: 'kid_unknown',
    proxy: 'kid_unknown',
    check: 'kid',
  },
  {
    name: 'another key under the real kid',
    token: () => attacker(a.signingKey.kid),
    serve: 'signature_invalid',
    proxy: 'signature_invalid',
    check: 'signature',
  },
  {
    name: 'a payload changed after signing',
    token: async () => {
      const [h, , s] = (await a.signJwt(good())).split('.')
      return `${h}.${b64({...good(), sub: 'admin'})}.${s}`
    },
    serve: 'signature_invalid',
    proxy: 'signature_invalid',
    check: 'signature',
  },
  {
    name: 'an unknown crit header',
    token: async () => rs256Raw({crit: ['x-unknown'], 'x-unknown': 1}, good()),
    serve: 'malformed',
    proxy: 'malformed',
    check: 'format',
  },
  {
    name: 'a random opaque string',
    token: async () => 'opaque-' + 'x'.repeat(40),
    serve: 'inactive',
    proxy: 'opaque_unsupported',
    check: 'introspection',
  },
  {
    name: 'three parts that do not decode (opaque)',
    token: async () => 'abc.def.ghi',
    serve: 'inactive',
    proxy: 'opaque_unsupported',
    check: 'introspection',
  },
  {
    name: 'an opaque token for another audience',
    token: () => b.issueAccessToken({format: 'opaque', audience: 'api://other'}),
    serve: 'aud_mismatch',
    proxy: 'opaque_unsupported',
    check: 'introspection',
  },
  {
    name: 'an opaque client-credentials token (no sub)',
    token: () => b.clientCredentialsToken({resource: OPAQUE_RESOURCE}),
    serve: 'sub_missing',
    proxy: 'opaque_unsupported',
    check: 'introspection',
  },
  {
    name: 'a header the server refuses (quote)',
    token: async () => 'abc"def',
    serve: 'header_malformed',
    proxy: 'header_malformed',
    check: 'header',
  },
]

describe('auth explain agrees with serve and proxy, token by token', () => {
  it('the table holds at least 25 refused tokens', () => {
    assert.ok(ROWS.filter((r) => r.serve !== 'accepted').length >= 25)
  })
  for (const row of ROWS) {
    it(row.name, async () => {
      const token = await row.token()
      for (const [server, url, path, source, expected] of [
        ['serve', serve.url, LIST, serveSource, row.serve],
        ['proxy', proxyUrl, '/mcp', proxySource, row.proxy],
      ] as const) {
        const answer = await send(url, path, token)
        const x = await explain(token, source)
        const where = `${server}: ${row.name}`
        // The verdict equals what the running server decided.
        assert.equal(
          x.verdict === 'accepted',
          answer.status !== 401,
          `${where}: verdict ${x.verdict}, server ${answer.status}`,
        )
        if (expected === 'accepted') {
          assert.equal(x.verdict, 'accepted', where)
          assert.equal(x.code, null)
          continue
        }
        assert.equal(answer.status, 401, where)
        assert.equal(x.verdict, 'refused', where)
        assert.equal(x.code, expected, where)
        // The server's 401 carries the same code (header problems keep their own description).
        if (expected.startsWith('header_')) assert.equal(answer.code, null, where)
        else assert.equal(answer.code, expected, `${where}: ${answer.description}`)
        assert.equal(x.errorDescription, answer.description, where)
        if (server === 'serve' && row.check) {
          assert.equal(x.check, row.check, where)
          const failing = x.providers.flatMap((p) => p.checks).filter((c) => c.status === 'fail')
          if (!['provider', 'header', 'format'].includes(row.check))
            assert.ok(
              failing.some((c) => c.id === row.check || (row.check === 'kid' && c.id === 'jwks')),
              `${where}: ${JSON.stringify(failing)}`,
            )
        }
      }
    })
  }

  it('names the issuer slip in a trailing-slash or scheme mismatch', async () => {
    const slash = await explain(await a.signJwt({...good(), iss: a.issuer + '/'}), serveSource)
    assert.match(slash.providers[0]?.hint ?? '', /trailing slash/)
    const scheme = await explain(
      await a.signJwt({...good(), iss: a.issuer.replace('http:', 'https:')}),
      serveSource,
    )
    assert.match(scheme.providers[0]?.hint ?? '', /scheme/)
    assert.equal(scheme.providers[1]?.selected, false)
  })

  it('reports when the JWKS was fetched and which kids it holds', async () => {
    const x = await explain(await attacker('no-such-kid'), serveSource)
    const jwks = x.providers[0]?.checks.find((c) => c.id === 'jwks')
    assert.equal(jwks?.status, 'fail')
    assert.match(jwks?.detail ?? '', new RegExp(`${a.signingKey.kid}`))
    assert.match(jwks?.detail ?? '', /fetched \d{4}-/)
  })

  it('shows the introspection answer for an opaque token', async () => {
    const x = await explain(
      await b.issueAccessToken({format: 'opaque', audience: 'api://other'}),
      serveSource,
    )
    const check = x.providers[1]?.checks.find((c) => c.id === 'introspection')
    assert.match(check?.detail ?? '', /active true, aud "api:\/\/other", exp \d+ \(in /)
  })

  it('--offline judges the claims without a network call and lists what it skipped', async () => {
    const before = a.requests.length
    const expired = await explain(await a.signJwt({...good(), exp: now() - 5}), serveSource, true)
    assert.equal(expired.verdict, 'refused')
    assert.equal(expired.code, 'expired')
    const fine = await explain(await a.signJwt(good()), serveSource, true)
    assert.equal(fine.verdict, 'unverified')
    assert.deepEqual(fine.skipped, ['a: kid lookup in the JWKS', 'a: signature'])
    const opaque = await explain('opaque-token-value', serveSource, true)
    assert.equal(opaque.verdict, 'unverified')
    assert.deepEqual(opaque.skipped, ['b: introspection'])
    assert.equal(a.requests.length, before, 'an offline explanation reached the provider')
  })

  it('the JSON is stable: same keys for every explanation, absent values as null', async () => {
    const shapes = new Set<string>()
    for (const row of ROWS.slice(0, 12)) {
      const x = explanationJson(await explain(await row.token(), serveSource)) as Explanation
      shapes.add(JSON.stringify([Object.keys(x), Object.keys(x.token)]))
      if (x.token.format === 'jwt')
        assert.deepEqual(Object.keys(x.token.claims ?? {}), [
          'iss',
          'sub',
          'aud',
          'exp',
          'nbf',
          'iat',
        ])
      for (const p of x.providers)
        for (const c of p.checks)
          assert.deepEqual(Object.keys(c), ['id', 'status', 'detail', 'code', 'expected', 'found'])
    }
    assert.equal(shapes.size, 1, [...shapes].join('\n'))
  })

  it('never prints the signature or the token', async () => {
    const token = await a.signJwt({...good(), aud: 'api://other'})
    const signature = token.split('.')[2] as string
    const x = JSON.stringify(await explain(token, serveSource))
    assert.ok(!x.includes(signature))
    assert.ok(!x.includes(token))
  })
})

describe('the auth explain command', () => {
  const cli = async (argv: string[], input?: string) => {
    const run = runCli(['auth', 'explain', ...argv], join(dir, 'home'), {}, input)
    const code = await run.exited
    return {code, stdout: run.stdout(), stderr: run.stderr()}
  }

  it('exits 0 for an accepted token (stdin), 1 for a refused one (--token-file), with JSON', async () => {
    const ok = await cli(['--config', configFile, '--json'], `${await a.signJwt(good())}\n`)
    assert.equal(ok.code, 0, ok.stderr)
    assert.equal((JSON.parse(ok.stdout) as Explanation).verdict, 'accepted')
    assert.equal((JSON.parse(ok.stdout) as {event: string}).event, 'explanation')
    const file = join(dir, 'token.txt')
    writeFileSync(file, `Bearer ${await a.signJwt({...good(), aud: 'api://other'})}\n`)
    const refused = await cli([...proxyArgs, '--token-file', file])
    assert.equal(refused.code, 1, refused.stderr)
    assert.match(refused.stdout, /^REFUSED: aud_mismatch \(check aud\)/)
    assert.match(
      refused.stdout,
      /\[FAIL\] aud +aud "api:\/\/other" does not contain "api:\/\/registry"/,
    )
  })

  it('usage and config errors are exit 2 and 78, naming what is wrong and never the token', async () => {
    const token = await a.signJwt(good())
    const none = await cli(['--token', token])
    assert.equal(none.code, 2)
    assert.match(none.stderr, /no providers/)
    const missing = await cli(['--config', configFile, '--token-file', join(dir, 'nope')])
    assert.equal(missing.code, 2)
    assert.match(missing.stderr, /--token-file .*nope: no such file/)
    const badConfig = join(dir, 'bad.yaml')
    writeFileSync(
      badConfig,
      'auth:\n  oauth:\n    resourceUrl: https://r.example\n    providers:\n      - name: x\n        issuerUrl: not a url\n',
    )
    const bad = await cli(['--config', badConfig, '--token', token])
    assert.equal(bad.code, 78)
    assert.match(bad.stderr, /providers\[0\]\.issuerUrl/)
    const two = await cli(['--config', configFile], `${token} ${token}`)
    assert.equal(two.code, 2)
    for (const r of [none, missing, bad, two])
      assert.ok(!r.stderr.includes(token) && !r.stdout.includes(token))
  })
})

describe('hostile token input', () => {
  const read = (token: string) => readToken({token, stdin: async () => '', stdinIsTty: false})

  it('refuses two words, an empty token and a runaway stdin, without quoting the input', async () => {
    await assert.rejects(
      read('secret-one secret-two'),
      (e: Error) => /more than one word/.test(e.message) && !e.message.includes('secret-one'),
    )
    await assert.rejects(read('   '), /the token is empty/)
    await assert.rejects(read('abc\r\nX-Injected: 1'), (e: Error) => !e.message.includes('abc'))
    const {Readable} = await import('node:stream')
    await assert.rejects(
      readBounded(Readable.from([Buffer.alloc(70 * 1024, 0x61)])),
      /more than 65536 bytes/,
    )
  })

  it('explains a token with control characters as the header problem the server reports', async () => {
    const x = await explain('abc\u0000def', serveSource)
    assert.deepEqual([x.verdict, x.code], ['refused', 'header_malformed'])
    const offline = await explain('abc\u0000def', serveSource, true)
    assert.deepEqual(
      [offline.code, offline.errorDescription],
      ['header_malformed', x.errorDescription],
    )
  })

  it('explains an oversized token without parsing it, as the server does', async () => {
    const x = await explain('a'.repeat(17 * 1024), serveSource, true)
    assert.deepEqual([x.verdict, x.code], ['refused', 'token_too_large'])
    const online = await explain('a'.repeat(17 * 1024), serveSource)
    assert.deepEqual([online.verdict, online.code], ['refused', 'token_too_large'])
    const answer = await send(serve.url, LIST, 'a'.repeat(17 * 1024))
    assert.deepEqual([answer.status, answer.code], [401, 'token_too_large'])
  })
})

describe('an unreachable provider', () => {
  it('is refused as provider_unavailable by explain and by a proxy, alike', async () => {
    const down = await startOidcProvider({audience: AUD})
    const token = await down.signJwt({iss: down.issuer, aud: AUD, sub: 'alice', exp: now() + 600})
    await down.stop()
    const logger = createMemoryLogger('debug')
    const flags = {issuer: down.issuer, audience: AUD, scopes: []}
    const config = proxyConfigFromFlags(
      'down',
      {
        'target-uri': 'http://127.0.0.1:9',
        host: '127.0.0.1',
        'max-request-body-size': 0,
        'oidc-issuer': down.issuer,
        'oidc-audience': AUD,
      },
      {logger},
    )
    const running = await startProxy(config, {
      logger,
      authenticator: createAuthenticator(oauthConfigFromOidc(config.oidc!, undefined), {logger}),
    })
    try {
      const answer = await send(running.url, '/mcp', token)
      const x = await explain(token, providersFromOidcFlags(flags))
      assert.deepEqual([answer.status, answer.code], [401, 'provider_unavailable'])
      assert.deepEqual(
        [x.verdict, x.code, x.errorDescription],
        ['refused', 'provider_unavailable', answer.description],
      )
      const jwks = x.providers[0]?.checks.find((c) => c.id === 'jwks')
      assert.equal(jwks?.status, 'fail')
      assert.match(jwks?.detail ?? '', /keys unavailable/)
    } finally {
      await running.close()
      await down.close()
    }
  })
})
