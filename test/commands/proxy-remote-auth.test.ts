import assert from 'node:assert/strict'
import {mkdtemp, rm} from 'node:fs/promises'
import {createServer} from 'node:http'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {setTimeout as sleep} from 'node:timers/promises'
import {runProxy, stop, waitFor, type Run} from '../helpers/proxy-run.ts'
import {
  driveLogin,
  freePort,
  startLoginProvider,
  startProtectedResource,
  type ProtectedResource,
} from '../helpers/oidc-login.ts'

/**
 * `toolgate proxy --remote-auth` end to end: the real command (bin/dev.js) against a real
 * oidc-provider, the login driven through its real pages from the URL the command prints with
 * --remote-auth-skip-browser, and the secrets store in a throwaway HOME (password from the env,
 * as in CI; the keyring is not reachable in this environment and the store falls back to it).
 */
const AUDIENCE = 'https://mcp.example.test/mcp'

const loginUrl = (run: Run) => /^\s+(http:\/\/\S+\/auth\?\S+)$/m.exec(run.stderr())?.[1]
const listening = (run: Run) => /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(run.stdout())?.[1]

describe('toolgate proxy --remote-auth (real command, real oidc-provider)', () => {
  let idp: Awaited<ReturnType<typeof startLoginProvider>>
  let upstream: ProtectedResource
  let home: string
  const runs: Run[] = []
  before(async () => {
    idp = await startLoginProvider()
    upstream = await startProtectedResource(idp.issuer, AUDIENCE)
    home = await mkdtemp(join(tmpdir(), 'toolgate-remote-auth-'))
  })
  after(async () => {
    await Promise.all(runs.map(stop))
    await upstream.close()
    await idp.close()
    await rm(home, {recursive: true, force: true})
  })

  const start = async (extra: string[] = []) => {
    const run = runProxy(
      [
        'remote',
        '--target-uri',
        upstream.url,
        '--port',
        '0',
        '--remote-auth',
        '--remote-auth-issuer',
        idp.issuer,
        '--remote-auth-skip-browser',
        '--remote-auth-callback-port',
        String(await freePort()),
        '--remote-auth-resource',
        AUDIENCE,
        ...extra,
      ],
      home,
    )
    runs.push(run)
    return run
  }

  it('logs in once through the printed URL, keeps working across token expiries, and restarts without a login', async () => {
    const first = await start()
    const url = await waitFor('the login URL', () => loginUrl(first), first)
    // The waiting line is written right after the URL, but may reach the pipe in a later chunk.
    await waitFor(
      'the waiting line',
      () => (/Waiting for login \(30s\)…/.test(first.stderr()) ? true : undefined),
      first,
    )
    // The proxy listens before the login: the startup line is out, and clients are told to retry.
    const proxyUrl = listening(first)
    assert.ok(proxyUrl, `no listening line before the login; stdout: ${first.stdout()}`)
    const early = await fetch(`${proxyUrl}/mcp`)
    assert.equal(early.status, 503)
    assert.equal(early.headers.get('retry-after'), '5')
    await early.body?.cancel()
    const page = await driveLogin(url, {login: 'carol'})
    assert.equal(page.status, 200)
    await waitFor(
      'the login',
      () => (/Logged in as carol/.test(first.stderr()) ? true : undefined),
      first,
    )
    assert.equal(first.stdout().match(/listening on/g)?.length, 1, 'one startup line')

    const statuses: number[] = []
    const until = Date.now() + 5000
    while (Date.now() < until) {
      const res = await fetch(`${proxyUrl}/mcp`)
      await res.body?.cancel()
      statuses.push(res.status)
      await sleep(200)
    }
    assert.ok(
      statuses.every((s) => s === 200),
      `statuses through the proxy: ${statuses.join(',')}`,
    )
    await stop(first)

    // The refresh token and the registration were saved: no browser on the next start.
    const second = await start(['--json'])
    const proxyUrl2 = await waitFor(
      'the listening line',
      () => /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(second.stdout())?.[1],
      second,
    )
    // The startup line comes first now (the login runs after binding): wait for the restore.
    await waitFor(
      'the restored login',
      () => (/"event":"restored"/.test(second.stderr()) ? true : undefined),
      second,
    )
    const events = second
      .stderr()
      .split('\n')
      .filter((l) => l.includes('"type":"remote_auth"'))
      .map((l) => JSON.parse(l).event)
    assert.deepEqual(events, ['discovered', 'restored'])
    const res = await fetch(`${proxyUrl2}/mcp`)
    assert.equal(res.status, 200)
    await res.body?.cancel()
    await stop(second)

    // Other scopes than the saved login's: not silently reused; a new login, and stderr says why.
    const third = await start(['--remote-auth-scopes', 'openid'])
    const url3 = await waitFor('the login URL', () => loginUrl(third), third)
    assert.match(
      third.stderr(),
      /A new login is needed: the saved login was made with other settings: scopes changed from "openid profile email" to "openid" \(--remote-auth-scopes\)/,
    )
    assert.equal(new URL(url3).searchParams.get('scope'), 'openid')
    assert.equal((await driveLogin(url3, {login: 'carol'})).status, 200)
    await waitFor(
      'the login',
      () => (/Logged in as carol/.test(third.stderr()) ? true : undefined),
      third,
    )
    await stop(third)
  })

  it('reports a busy --port before any login starts', async () => {
    const busy = createServer()
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', () => resolve()))
    const port = (busy.address() as {port: number}).port
    try {
      const run = runProxy(
        [
          'busy',
          '--target-uri',
          upstream.url,
          '--port',
          String(port),
          '--remote-auth',
          '--remote-auth-issuer',
          idp.issuer,
          '--remote-auth-skip-browser',
          '--remote-auth-callback-port',
          String(await freePort()),
          '--remote-auth-timeout',
          '5s',
        ],
        await mkdtemp(join(home, 'busy-')),
      )
      runs.push(run)
      assert.equal(await run.exited, 69)
      assert.match(
        run.stderr(),
        new RegExp(`--port: address 127\\.0\\.0\\.1:${port} is already in use`),
      )
      assert.equal(loginUrl(run), undefined, 'no login URL was printed')
      assert.doesNotMatch(run.stderr(), /Remote authorization server|Waiting for login/)
      assert.equal(run.stdout(), '')
    } finally {
      await new Promise<void>((resolve) => busy.close(() => resolve()))
    }
  })

  it('exits non-zero with the server error when the user denies access', async () => {
    const run = runProxy(
      [
        'denied',
        '--target-uri',
        upstream.url,
        '--remote-auth',
        '--remote-auth-issuer',
        idp.issuer,
        '--remote-auth-skip-browser',
        '--remote-auth-callback-port',
        String(await freePort()),
      ],
      await mkdtemp(join(home, 'denied-')),
    )
    runs.push(run)
    const url = await waitFor('the login URL', () => loginUrl(run), run)
    const page = await driveLogin(url, {abort: true})
    assert.equal(page.status, 400)
    assert.equal(await run.exited, 77)
    assert.match(
      run.stderr(),
      /Error: authorization failed: access_denied \(End-User aborted interaction\)/,
    )
    // It listened during the login (503 to clients) and closed when the login failed.
    assert.match(run.stdout(), /listening on/)
  })

  it('exits non-zero after --remote-auth-timeout with a clear message, releasing the callback port', async () => {
    const port = await freePort()
    const run = runProxy(
      [
        'slow',
        '--target-uri',
        upstream.url,
        '--remote-auth',
        '--remote-auth-issuer',
        idp.issuer,
        '--remote-auth-skip-browser',
        '--remote-auth-callback-port',
        String(port),
        '--remote-auth-timeout',
        '1s',
      ],
      await mkdtemp(join(home, 'slow-')),
    )
    runs.push(run)
    assert.equal(await run.exited, 69)
    assert.match(run.stderr(), /Error: remote login did not complete within 1s/)
    const server = createServer()
    await new Promise<void>((resolve, reject) =>
      server.once('error', reject).listen(port, '127.0.0.1', () => resolve()),
    )
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })

  it('refuses conflicting flags before doing anything', async () => {
    const table: Array<[string[], RegExp]> = [
      [
        [
          '--remote-auth',
          '--remote-auth-issuer',
          idp.issuer,
          '--remote-auth-authorize-url',
          `${idp.issuer}/auth`,
          '--remote-auth-token-url',
          `${idp.issuer}/token`,
        ],
        /are alternatives/,
      ],
      [
        [
          '--remote-auth',
          '--remote-auth-authorize-url',
          `${idp.issuer}/auth`,
          '--remote-auth-client-id',
          'x',
        ],
        /--remote-auth-authorize-url needs --remote-auth-token-url/,
      ],
      [
        ['--remote-auth', '--remote-auth-bearer-token', 'abc'],
        /--remote-auth-bearer-token and --remote-auth are alternatives/,
      ],
      [['--remote-auth-issuer', idp.issuer], /--remote-auth-issuer needs --remote-auth/],
    ]
    for (const [flags, message] of table) {
      const run = runProxy(['conflict', '--target-uri', upstream.url, ...flags], home)
      runs.push(run)
      assert.equal(await run.exited, 2, flags.join(' '))
      assert.match(run.stderr(), message)
    }
  })
})
