import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {parseForwardHeaders} from '../../../src/lib/proxy/forward-headers.ts'
import {proxyConfigFromFlags, type ProxyFlags} from '../../../src/lib/proxy/options.ts'

const base: ProxyFlags = {
  'target-uri': 'http://127.0.0.1:9',
  host: '127.0.0.1',
  'max-request-body-size': 0,
}

function usageError(fn: () => unknown, pattern: RegExp, secret?: string) {
  assert.throws(fn, (err: Error & {code?: string}) => {
    assert.equal(err.code, 'ERR_USAGE')
    assert.match(err.message, pattern)
    if (secret) assert.ok(!err.message.includes(secret), 'the message must not echo the value')
    return true
  })
}

describe('header injection (--remote-forward-headers)', () => {
  it('splits at the first = and keeps the rest of the value', () => {
    assert.deepEqual(parseForwardHeaders(['X-Api-Key=a=b=c', 'X-Empty=']), [
      {name: 'x-api-key', value: 'a=b=c'},
      {name: 'x-empty', value: ''},
    ])
  })

  const restricted = [
    'Host',
    'Connection',
    'Content-Length',
    'Transfer-Encoding',
    'Forwarded',
    'X-Forwarded-For',
    'x-forwarded-host',
    'X-Real-IP',
    'Proxy-Authorization',
    'Keep-Alive',
    'TE',
    'Trailer',
    'Upgrade',
  ]
  for (const name of restricted) {
    it(`refuses the restricted header ${name}`, () => {
      usageError(
        () => parseForwardHeaders([`${name}=x`]),
        new RegExp(`"${name}" is managed by the proxy`),
      )
    })
  }

  const bad: Array<[string, string, RegExp]> = [
    ['a value with CR LF', 'X-A=ok\r\nX-Injected: evil', /contains CR, LF or control/],
    ['a value with a bare LF', 'X-A=ok\nsecret', /contains CR, LF or control/],
    ['a value with NUL', 'X-A=ok\u0000secret', /contains CR, LF or control/],
    ['a name with a space', 'X A=v', /not a valid header name/],
    ['a name with a colon', 'X-A:=v', /not a valid header name/],
    ['no =', 'X-A', /expected Name=Value/],
    ['an empty name', '=v', /expected Name=Value/],
  ]
  for (const [what, entry, pattern] of bad) {
    it(`refuses ${what} and names the flag without echoing the value`, () => {
      usageError(() => parseForwardHeaders([entry]), pattern, 'secret')
      usageError(() => parseForwardHeaders([entry]), /--remote-forward-headers\[0\]/)
    })
  }
})

describe('proxy flags → config', () => {
  const logger = createMemoryLogger()

  it('applies the spec defaults', () => {
    const c = proxyConfigFromFlags('srv', base, {logger, env: {}})
    assert.equal(c.port, 0)
    assert.equal(c.host, '127.0.0.1')
    assert.equal(c.maxRequestBodySize, 0)
    assert.deepEqual(c.oidc?.scopes, ['openid'])
    assert.equal(c.allowedOrigins, undefined)
    assert.equal(c.upstreamToken, undefined)
  })

  it('refuses a bearer token flag together with a token file', () => {
    usageError(
      () =>
        proxyConfigFromFlags(
          'srv',
          {...base, 'remote-auth-bearer-token': 't', 'remote-auth-bearer-token-file': '/x'},
          {logger, env: {}},
        ),
      /--remote-auth-bearer-token and --remote-auth-bearer-token-file cannot be used together/,
    )
  })

  it('refuses a token-exchange client secret together with its file', () => {
    usageError(
      () =>
        proxyConfigFromFlags(
          'srv',
          {
            ...base,
            'token-exchange-url': 'http://127.0.0.1:1/token',
            'token-exchange-client-id': 'c',
            'token-exchange-client-secret': 's',
            'token-exchange-client-secret-file': '/x',
          },
          {logger, env: {}},
        ),
      /cannot be used together/,
    )
  })

  it('takes the outgoing bearer by precedence flag → file → env', async () => {
    const files = {'/tok': 'from-file\n'}
    const deps = {
      logger,
      env: {TOOLGATE_REMOTE_AUTH_BEARER_TOKEN: 'from-env'},
      readSecretFile: (p: string) => files[p as '/tok'].trim(),
    }
    const token = async (flags: Partial<ProxyFlags>) =>
      proxyConfigFromFlags('s', {...base, ...flags}, deps).upstreamToken?.getToken()
    assert.equal(await token({'remote-auth-bearer-token': 'from-flag'}), 'from-flag')
    assert.equal(await token({'remote-auth-bearer-token-file': '/tok'}), 'from-file')
    assert.equal(await token({}), 'from-env')
  })

  it('reports an unreadable token file naming the flag', () => {
    assert.throws(
      () =>
        proxyConfigFromFlags(
          's',
          {...base, 'remote-auth-bearer-token-file': '/nonexistent/tok'},
          {logger, env: {}},
        ),
      (err: Error & {code?: string}) =>
        err.code === 'ERR_FILE_UNREADABLE' && /--remote-auth-bearer-token-file/.test(err.message),
    )
  })

  const badFlags: Array<[string, Partial<ProxyFlags>, RegExp]> = [
    ['a relative target', {'target-uri': '/mcp'}, /--target-uri: .* is not an absolute URL/],
    ['a non-http target', {'target-uri': 'ftp://h/x'}, /--target-uri: scheme must be/],
    ['a bad allowed origin', {'allowed-origins': ['example.com']}, /--allowed-origins/],
    [
      'an exchange URL over plain http to another host',
      {'token-exchange-url': 'http://auth.example.com/token'},
      /must be https/,
    ],
    [
      'exchange options without an exchange URL',
      {'token-exchange-audience': 'x'},
      /--token-exchange-audience needs --token-exchange-url/,
    ],
    [
      'an unknown subject token type',
      {'token-exchange-url': 'https://a.test/t', 'token-exchange-subject-token-type': 'saml'},
      /access_token or id_token/,
    ],
    [
      'a restricted exchange header name',
      {'token-exchange-url': 'https://a.test/t', 'token-exchange-header-name': 'Host'},
      /--token-exchange-header-name/,
    ],
    [
      'a JWKS URL without issuer or audience',
      {'oidc-jwks-url': 'https://idp.test/jwks'},
      /--oidc-jwks-url: also set --oidc-issuer or --oidc-audience/,
    ],
    [
      'an introspection URL without issuer or audience',
      {'oidc-introspection-url': 'https://idp.test/introspect', 'oidc-client-id': 'c'},
      /--oidc-introspection-url: also set --oidc-issuer or --oidc-audience/,
    ],
  ]
  for (const [what, flags, pattern] of badFlags) {
    it(`refuses ${what}`, () =>
      usageError(() => proxyConfigFromFlags('s', {...base, ...flags}, {logger, env: {}}), pattern))
  }

  const pinned: Array<[string, Partial<ProxyFlags>]> = [
    [
      'a JWKS URL with an audience',
      {'oidc-jwks-url': 'https://idp.test/jwks', 'oidc-audience': 'api://x'},
    ],
    [
      'a JWKS URL with an issuer',
      {'oidc-jwks-url': 'https://idp.test/jwks', 'oidc-issuer': 'https://idp.test'},
    ],
    [
      'an introspection URL with an audience',
      {'oidc-introspection-url': 'https://idp.test/i', 'oidc-audience': 'api://x'},
    ],
  ]
  for (const [what, flags] of pinned) {
    it(`accepts ${what}`, () => {
      assert.ok(proxyConfigFromFlags('s', {...base, ...flags}, {logger, env: {}}).oidc)
    })
  }

  it('keeps issuer and resource URL exactly as typed', () => {
    const c = proxyConfigFromFlags(
      's',
      {
        ...base,
        'oidc-issuer': 'http://127.0.0.1:1/realms/x/',
        'resource-url': 'http://127.0.0.1:2',
      },
      {logger, env: {}},
    )
    assert.equal(c.oidc?.issuer, 'http://127.0.0.1:1/realms/x/')
    assert.equal(c.resourceUrl, 'http://127.0.0.1:2')
  })

  it('accepts comma-separated and repeated scope lists', () => {
    const c = proxyConfigFromFlags(
      's',
      {...base, 'oidc-scopes': ['openid,mcp:tools', 'profile']},
      {logger, env: {}},
    )
    assert.deepEqual(c.oidc?.scopes, ['openid', 'mcp:tools', 'profile'])
  })
})
