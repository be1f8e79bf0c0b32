import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {buildAuthorizationUrl} from '../../../src/lib/oauth/authorization-url.ts'
import {
  explicitServer,
  parseProtectedResourceMetadata,
  wellKnownResourceMetadataUrls,
} from '../../../src/lib/oauth/discovery.ts'
import {createProgressRenderer} from '../../../src/lib/oauth/progress.ts'
import {bearerChallenge, parseWwwAuthenticate} from '../../../src/lib/oauth/www-authenticate.ts'

describe('WWW-Authenticate parsing (RFC 9110 §11.6.1, RFC 9728 §5.1)', () => {
  const table: Array<[string, string, Record<string, string> | undefined]> = [
    [
      'quoted params',
      'Bearer realm="r", resource_metadata="https://a.example/.well-known/oauth-protected-resource"',
      {realm: 'r', resource_metadata: 'https://a.example/.well-known/oauth-protected-resource'},
    ],
    [
      'token params and case-insensitive scheme',
      'bearer error=invalid_token, scope="a b"',
      {error: 'invalid_token', scope: 'a b'},
    ],
    ['escaped quote', 'Bearer error_description="say \\"hi\\""', {error_description: 'say "hi"'}],
    ['Bearer after another scheme', 'Basic realm="x", Bearer realm="y"', {realm: 'y'}],
    ['Bearer after a token68 scheme', 'Negotiate abc==, Bearer realm="z"', {realm: 'z'}],
    ['bare Bearer', 'Bearer', {}],
    ['first of a repeated parameter', 'Bearer realm="a", realm="b"', {realm: 'a'}],
    ['no Bearer at all', 'Basic realm="x"', undefined],
  ]
  for (const [name, header, params] of table) {
    it(`reads ${name}`, () => {
      assert.deepEqual(bearerChallenge(header)?.params, params)
    })
  }
  it('returns nothing for an absent header', () => {
    assert.deepEqual(parseWwwAuthenticate(undefined), [])
  })
})

describe('authorization URL (RFC 6749 §4.1.1, RFC 7636, RFC 8707)', () => {
  const server = explicitServer(
    new URL('https://as.example/authorize?tenant=7'),
    new URL('https://as.example/token'),
  )
  const base = {
    clientId: 'c',
    redirectUri: 'http://127.0.0.1:8666/callback',
    scopes: ['read', 'write'],
    state: 's',
    codeChallenge: 'cc',
  }

  it('carries PKCE S256, state, redirect, scope and keeps the endpoint query', () => {
    const url = buildAuthorizationUrl(server, base)
    assert.equal(url.searchParams.get('tenant'), '7')
    assert.equal(url.searchParams.get('response_type'), 'code')
    assert.equal(url.searchParams.get('code_challenge_method'), 'S256')
    assert.equal(url.searchParams.get('scope'), 'read write')
    assert.equal(url.searchParams.get('resource'), null)
  })
  it('renames the scope parameter only when asked, and adds the resource', () => {
    const url = buildAuthorizationUrl(server, {
      ...base,
      scopeParamName: 'scopes',
      resource: 'https://mcp.example/mcp',
    })
    assert.equal(url.searchParams.get('scope'), null)
    assert.equal(url.searchParams.get('scopes'), 'read write')
    assert.equal(url.searchParams.get('resource'), 'https://mcp.example/mcp')
  })
  it('sends no scope parameter when there are no scopes', () => {
    assert.equal(
      buildAuthorizationUrl(server, {...base, scopes: []}).searchParams.has('scope'),
      false,
    )
  })
})

describe('protected resource metadata (RFC 9728)', () => {
  it('puts the well-known segment before the resource path (§3.1)', () => {
    assert.deepEqual(
      wellKnownResourceMetadataUrls(new URL('https://r.example/v1/mcp')).map(String),
      [
        'https://r.example/.well-known/oauth-protected-resource/v1/mcp',
        'https://r.example/.well-known/oauth-protected-resource',
      ],
    )
  })
  const bad: Array<[string, unknown, RegExp]> = [
    ['not an object', [], /not a JSON object/],
    [
      'no authorization servers',
      {resource: 'x'},
      /authorization_servers must be a non-empty array/,
    ],
    ['a non-http server', {authorization_servers: ['javascript:alert(1)']}, /not an http\(s\) URL/],
  ]
  for (const [name, body, message] of bad) {
    it(`refuses metadata with ${name}`, () => {
      assert.throws(
        () => parseProtectedResourceMetadata(body, 'https://r.example/.well-known/x'),
        message,
      )
    })
  }
})

describe('progress rendering', () => {
  it('writes JSON lines with --json, one object per event', () => {
    const lines: string[] = []
    const sink = createProgressRenderer({
      write: (t) => lines.push(t),
      json: true,
      now: () => new Date(0),
    })
    sink({event: 'waiting', timeout_ms: 30_000})
    assert.deepEqual(JSON.parse(lines[0] as string), {
      time: '1970-01-01T00:00:00.000Z',
      type: 'remote_auth',
      event: 'waiting',
      timeout_ms: 30_000,
    })
  })
  it('writes plain lines off a TTY and a spinner only on a TTY', () => {
    const plain: string[] = []
    createProgressRenderer({write: (t) => plain.push(t), isTTY: false})({
      event: 'waiting',
      timeout_ms: 30_000,
    })
    assert.deepEqual(plain, ['Waiting for login (30s)…\n'])
    const tty: string[] = []
    const sink = createProgressRenderer({write: (t) => tty.push(t), isTTY: true})
    sink({event: 'waiting', timeout_ms: 90_000})
    sink({event: 'logged_in', issuer: 'https://i.example', subject: 'ana'})
    sink.stop()
    // eslint-disable-next-line no-control-regex
    assert.match(tty[0] as string, /^\r\x1b\[2K⠋ Waiting for login \(90s\)…$/)
    assert.equal(tty.at(-1), 'Logged in as ana (https://i.example)\n')
  })
})
