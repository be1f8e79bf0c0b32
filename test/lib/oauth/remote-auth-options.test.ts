import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {
  remoteAuthOptionsFromFlags,
  type RemoteAuthFlags,
} from '../../../src/lib/oauth/remote-auth-options.ts'

const TARGET = 'https://mcp.example.com/mcp'
const on = {'remote-auth': true} as const

describe('--remote-auth* flags', () => {
  it('is off without --remote-auth', async () => {
    assert.equal(await remoteAuthOptionsFromFlags({}, TARGET), undefined)
    assert.equal(
      await remoteAuthOptionsFromFlags(
        {'remote-auth-callback-port': 8666, 'remote-auth-timeout': '30s'},
        TARGET,
      ),
      undefined,
    )
  })

  it('applies the spec defaults: port 8666, timeout 30s, no browser skip, scopes left to discovery', async () => {
    const o = await remoteAuthOptionsFromFlags(
      {...on, 'remote-auth-issuer': 'https://idp.example.com'},
      TARGET,
      {env: {}},
    )
    assert.equal(o?.callbackPort, 8666)
    assert.equal(o?.timeoutMs, 30_000)
    assert.equal(o?.skipBrowser, false)
    assert.equal(o?.scopes, undefined)
    assert.equal(o?.issuer?.href, 'https://idp.example.com/')
  })

  it('parses durations like the spec writes them', async () => {
    for (const [text, ms] of [
      ['1m', 60_000],
      ['2m30s', 150_000],
      ['45s', 45_000],
    ] as const) {
      const o = await remoteAuthOptionsFromFlags({...on, 'remote-auth-timeout': text}, TARGET, {
        env: {},
      })
      assert.equal(o?.timeoutMs, ms, text)
    }
  })

  it('splits scopes given comma-separated or repeated', async () => {
    const o = await remoteAuthOptionsFromFlags(
      {...on, 'remote-auth-scopes': ['openid,email', 'read write']},
      TARGET,
      {env: {}},
    )
    assert.deepEqual(o?.scopes, ['openid', 'email', 'read', 'write'])
  })

  const usage: Array<[string, RemoteAuthFlags, RegExp]> = [
    [
      'an OAuth flag without --remote-auth',
      {'remote-auth-client-id': 'x'},
      /--remote-auth-client-id needs --remote-auth/,
    ],
    [
      'issuer with explicit URLs',
      {
        ...on,
        'remote-auth-issuer': 'https://i.example',
        'remote-auth-token-url': 'https://i.example/t',
      },
      /alternatives/,
    ],
    [
      'authorize URL alone',
      {...on, 'remote-auth-authorize-url': 'https://i.example/a', 'remote-auth-client-id': 'c'},
      /--remote-auth-authorize-url needs --remote-auth-token-url/,
    ],
    [
      'token URL alone',
      {...on, 'remote-auth-token-url': 'https://i.example/t', 'remote-auth-client-id': 'c'},
      /--remote-auth-token-url needs --remote-auth-authorize-url/,
    ],
    [
      'explicit URLs without a client id',
      {
        ...on,
        'remote-auth-authorize-url': 'https://i.example/a',
        'remote-auth-token-url': 'https://i.example/t',
      },
      /need --remote-auth-client-id/,
    ],
    [
      'bearer token with --remote-auth',
      {...on, 'remote-auth-bearer-token': 't'},
      /--remote-auth-bearer-token and --remote-auth are alternatives/,
    ],
    [
      'bearer token file with --remote-auth',
      {...on, 'remote-auth-bearer-token-file': '/t'},
      /--remote-auth-bearer-token-file and --remote-auth/,
    ],
    [
      'a secret without a client id',
      {...on, 'remote-auth-client-secret': 's'},
      /--remote-auth-client-secret needs --remote-auth-client-id/,
    ],
    [
      'plain http issuer off loopback',
      {...on, 'remote-auth-issuer': 'http://idp.example.com'},
      /--remote-auth-issuer: must use https/,
    ],
    [
      'issuer that is not a URL',
      {...on, 'remote-auth-issuer': 'idp'},
      /--remote-auth-issuer: "idp" is not an absolute URL/,
    ],
    [
      'resource with a fragment',
      {...on, 'remote-auth-resource': 'https://r.example/#x'},
      /--remote-auth-resource: .* without a fragment/,
    ],
    [
      'bad timeout',
      {...on, 'remote-auth-timeout': '30'},
      /--remote-auth-timeout: "30" is not a duration/,
    ],
    [
      'bad scope',
      {...on, 'remote-auth-scopes': ['a"b']},
      /--remote-auth-scopes: "a"b" is not a valid scope/,
    ],
    [
      'bad scope parameter name',
      {...on, 'remote-auth-scope-param-name': 'a b'},
      /--remote-auth-scope-param-name/,
    ],
  ]
  for (const [name, flags, message] of usage) {
    it(`refuses ${name} as a usage error`, async () => {
      await assert.rejects(
        remoteAuthOptionsFromFlags(flags, TARGET, {env: {}}),
        (err: Error & {code?: string}) => {
          assert.equal(err.code, 'ERR_USAGE')
          assert.match(err.message, message)
          return true
        },
      )
    })
  }

  it('allows plain http for a loopback issuer (typed URLs are trusted as given)', async () => {
    const o = await remoteAuthOptionsFromFlags(
      {...on, 'remote-auth-issuer': 'http://127.0.0.1:9000'},
      TARGET,
      {env: {}},
    )
    assert.equal(o?.issuer?.origin, 'http://127.0.0.1:9000')
  })

  it('ignores TOOLGATE_REMOTE_OAUTH_CLIENT_SECRET without a client id, so a global env cannot break registration', async () => {
    const o = await remoteAuthOptionsFromFlags(on, TARGET, {
      env: {TOOLGATE_REMOTE_OAUTH_CLIENT_SECRET: 's'},
    })
    assert.equal(o?.clientSecret, undefined)
  })

  it('reports an unreadable secret file by path, never by content', async () => {
    await assert.rejects(
      remoteAuthOptionsFromFlags(
        {
          ...on,
          'remote-auth-client-id': 'c',
          'remote-auth-client-secret-file': '/nonexistent/secret',
        },
        TARGET,
        {env: {}},
      ),
      {
        code: 'ERR_FILE_UNREADABLE',
        message:
          /^--remote-auth-client-secret-file: cannot read \/nonexistent\/secret \(no such file\)$/,
      },
    )
  })
})
