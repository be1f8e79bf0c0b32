import assert from 'node:assert/strict'
import {spawn, type ChildProcess} from 'node:child_process'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {fileURLToPath} from 'node:url'
import {startRecordingUpstream, type RecordingUpstream} from '../helpers/mcp-upstream.ts'
import {startOidcProvider, type OidcProviderFixture} from '../helpers/oidc-provider.ts'

const root = join(fileURLToPath(import.meta.url), '..', '..', '..')

/**
 * `toolgate proxy --oidc-introspection-url` end to end: the real command, the real oidc-provider's
 * RFC 7662 endpoint (client_secret_basic) and opaque access tokens minted by it.
 */
describe('toolgate proxy with token introspection (end to end)', () => {
  let idp: OidcProviderFixture
  let upstream: RecordingUpstream
  let child: ChildProcess | undefined
  let url: string
  let stderr = ''

  before(async () => {
    idp = await startOidcProvider()
    upstream = await startRecordingUpstream()
    child = spawn(
      process.execPath,
      [
        join(root, 'bin', 'dev.js'),
        'proxy',
        '--json',
        '--target-uri',
        upstream.url,
        '--oidc-issuer',
        idp.issuer,
        '--oidc-audience',
        idp.audience,
        '--oidc-introspection-url',
        idp.introspectionUrl,
        '--oidc-client-id',
        idp.client.clientId,
        '--oidc-client-secret',
        idp.client.clientSecret,
        'introspected',
      ],
      {
        cwd: root,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {...process.env, TOOLGATE_REMOTE_AUTH_BEARER_TOKEN: ''},
      },
    )
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
    url = await new Promise<string>((resolve, reject) => {
      let out = ''
      const timer = setTimeout(() => reject(new Error(`proxy did not start: ${stderr}`)), 60_000)
      child!.once('exit', (code) => reject(new Error(`proxy exited ${code}: ${stderr}`)))
      child!.stdout!.on('data', (d: Buffer) => {
        out += d.toString()
        const line = out.split('\n').find((l) => l.startsWith('{'))
        if (line) {
          clearTimeout(timer)
          resolve((JSON.parse(line) as {url: string}).url)
        }
      })
    })
  })
  after(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child!.once('exit', r))
      child.kill('SIGTERM')
      await exited
    }
    await upstream?.close()
    await idp?.close()
  })

  const post = (authorization?: string) =>
    fetch(url + '/mcp', {
      method: 'POST',
      headers: {'content-type': 'application/json', ...(authorization ? {authorization} : {})},
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
      signal: AbortSignal.timeout(30_000),
    })

  it('forwards a request carrying an active opaque token, after asking the introspection endpoint', async () => {
    const token = await idp.issueAccessToken({sub: 'opaque-user', format: 'opaque'})
    assert.ok(!token.includes('.'), 'the fixture minted an opaque (non-JWT) token')
    const seen = upstream.requests.length
    const introspections = idp.requests.filter((r) => r.path.endsWith('/introspection')).length
    const res = await post(`Bearer ${token}`)
    assert.equal(res.status, 200, await res.clone().text())
    await res.text()
    assert.equal(upstream.requests.length, seen + 1)
    assert.ok(
      idp.requests.filter((r) => r.path.endsWith('/introspection')).length > introspections,
      'the token was introspected',
    )
  })

  it('refuses an opaque token the provider does not know with 401 invalid_token, forwarding nothing', async () => {
    const seen = upstream.requests.length
    const res = await post('Bearer unknown-opaque-token-value-0123456789')
    assert.equal(res.status, 401)
    assert.equal(((await res.json()) as {error: string}).error, 'invalid_token')
    assert.match(
      res.headers.get('www-authenticate') ?? '',
      /^Bearer realm=".*", error="invalid_token"/,
    )
    assert.equal(upstream.requests.length, seen)
    assert.doesNotMatch(stderr, /unknown-opaque-token-value/)
  })
})
