import assert from 'node:assert/strict'
import {execFile} from 'node:child_process'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {promisify} from 'node:util'
import {decodeJwt} from 'jose'
import {
  driveLogin,
  freePort,
  startLoginProvider,
  startProtectedResource,
  type ProtectedResource,
} from '../helpers/oidc-login.ts'
import {runCli, runProxy, stop, waitFor, type Run} from '../helpers/proxy-run.ts'

const AUDIENCE = 'https://mcp.example.test/mcp'

/** `toolgate auth token`: the real command, a real oidc-provider, tokens used as scripts would. */
describe('toolgate auth token', () => {
  let idp: Awaited<ReturnType<typeof startLoginProvider>>
  let upstream: ProtectedResource
  let home: string
  const runs: Run[] = []
  const token = (argv: string[], env: NodeJS.ProcessEnv = {}) => {
    const run = runCli(['auth', 'token', upstream.url, ...argv], home, env)
    runs.push(run)
    return run
  }
  const call = async (t: string) => {
    const res = await fetch(`${upstream.url}/mcp`, {headers: {authorization: `Bearer ${t}`}})
    await res.body?.cancel()
    return res.status
  }
  before(async () => {
    idp = await startLoginProvider({audience: AUDIENCE, accessTokenTtl: 300})
    upstream = await startProtectedResource(idp.issuer, AUDIENCE)
    home = await mkdtemp(join(tmpdir(), 'toolgate-auth-token-'))
  })
  after(async () => {
    await Promise.all(runs.map(stop))
    await upstream.close()
    await idp.close()
    await rm(home, {recursive: true, force: true})
  })

  it('prints a client-credentials token that the server accepts; --json adds expiry and scopes', async () => {
    const secretFile = join(home, 'secret')
    await writeFile(secretFile, idp.client.clientSecret, {mode: 0o600})
    const args = [
      '--remote-auth-grant',
      'client_credentials',
      '--remote-auth-issuer',
      idp.issuer,
      '--remote-auth-client-id',
      idp.client.clientId,
      '--remote-auth-client-secret-file',
      secretFile,
      '--remote-auth-resource',
      AUDIENCE,
      '--remote-auth-scopes',
      'read',
    ]
    const plain = token(args, {CI: 'true'})
    assert.equal(await plain.exited, 0, plain.stderr())
    const lines = plain.stdout().trim().split('\n')
    assert.equal(lines.length, 1, 'stdout is the token and nothing else')
    assert.equal(await call(lines[0]!), 200)

    const json = token([...args, '--json'], {CI: 'true'})
    assert.equal(await json.exited, 0, json.stderr())
    const out = JSON.parse(json.stdout()) as Record<string, unknown>
    assert.equal(out.event, 'token')
    assert.equal(out.token_type, 'Bearer')
    assert.deepEqual(out.scopes, ['read'])
    const exp = Date.parse(String(out.expires_at))
    assert.ok(exp > Date.now() && exp <= Date.now() + 3600_000 + 5000, String(out.expires_at))
    assert.equal(decodeJwt(String(out.access_token)).aud, AUDIENCE)
    assert.equal(await call(String(out.access_token)), 200)

    // The same token, as a script would use it, through a toolgate proxy that validates it.
    const proxy = runProxy(
      [
        'guarded',
        '--target-uri',
        upstream.url,
        '--port',
        '0',
        '--oidc-issuer',
        idp.issuer,
        '--oidc-audience',
        AUDIENCE,
        '--remote-forward-incoming-token',
      ],
      home,
    )
    runs.push(proxy)
    const base = await waitFor(
      'the proxy',
      () => /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(proxy.stdout())?.[1],
      proxy,
    )
    const through = await fetch(`${base}/mcp`, {
      headers: {authorization: `Bearer ${String(out.access_token)}`},
    })
    assert.equal(through.status, 200)
    await through.body?.cancel()
    const refused = await fetch(`${base}/mcp`, {headers: {authorization: 'Bearer not-a-token'}})
    assert.equal(refused.status, 401)
    await refused.body?.cancel()
  })

  it('reuses the saved browser login: the second call needs no person', async () => {
    const args = [
      '--remote-auth-issuer',
      idp.issuer,
      '--remote-auth-skip-browser',
      '--remote-auth-callback-port',
      String(await freePort()),
      '--remote-auth-resource',
      AUDIENCE,
    ]
    const first = token(args)
    const url = await waitFor(
      'the login URL',
      () => /^\s+(http:\/\/\S+\/auth\?\S+)$/m.exec(first.stderr())?.[1],
      first,
    )
    assert.equal((await driveLogin(url, {login: 'frank'})).status, 200)
    assert.equal(await first.exited, 0, first.stderr())
    assert.equal(await call(first.stdout().trim()), 200)

    const second = token([...args, '--json'], {CI: 'true'})
    assert.equal(await second.exited, 0, second.stderr())
    assert.match(second.stderr(), /"event":"restored"/)
    assert.equal(await call(JSON.parse(second.stdout()).access_token), 200)
  })

  it('refuses to print a token to a terminal unless --show', async () => {
    // `script` (util-linux) gives the command a real pseudo-terminal as stdout.
    const cmd = `${process.execPath} bin/dev.js auth token ${upstream.url} --remote-auth-issuer ${idp.issuer}`
    const run = promisify(execFile)
    const result = await run('script', ['-qec', cmd, '/dev/null'], {
      env: {PATH: process.env.PATH, HOME: home, CI: 'true'},
    }).catch((err: {code: number; stdout: string}) => err)
    assert.equal((result as {code?: number}).code, 2)
    assert.match(String(result.stdout), /refusing to print an access token to a terminal/)
  })
})
