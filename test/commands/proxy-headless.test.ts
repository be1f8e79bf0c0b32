import assert from 'node:assert/strict'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {
  approveDeviceLogin,
  startLoginProvider,
  startProtectedResource,
  type ProtectedResource,
} from '../helpers/oidc-login.ts'
import {runCli, runProxy, stop, waitFor, type Run} from '../helpers/proxy-run.ts'

/**
 * `toolgate proxy --remote-auth` where no browser can open (issue: headless and CI use): the real
 * command against a real oidc-provider with the device flow on, and a protected resource that
 * accepts only that provider's tokens for the audience.
 */
const AUDIENCE = 'https://mcp.example.test/mcp'

const listening = (run: Run) =>
  /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(run.stdout())?.[1] ??
  /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(run.stdout())?.[1]

const events = (run: Run) =>
  run
    .stderr()
    .split('\n')
    .filter((l) => l.includes('"type":"remote_auth"'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)

describe('toolgate proxy --remote-auth without a browser (device flow, client credentials, CI)', () => {
  let idp: Awaited<ReturnType<typeof startLoginProvider>>
  let upstream: ProtectedResource
  let home: string
  const runs: Run[] = []
  const start = async (args: string[], env: NodeJS.ProcessEnv = {}, runHome?: string) => {
    const run = runProxy(
      ['headless', '--target-uri', upstream.url, '--port', '0', '--json', ...args],
      runHome ?? (await mkdtemp(join(home, 'run-'))),
      env,
    )
    runs.push(run)
    return run
  }
  before(async () => {
    idp = await startLoginProvider({
      audience: AUDIENCE,
      accessTokenTtl: 120,
      configure: (config) => {
        config.features!.deviceFlow = {enabled: true}
      },
    })
    upstream = await startProtectedResource(idp.issuer, AUDIENCE)
    home = await mkdtemp(join(tmpdir(), 'toolgate-headless-'))
  })
  after(async () => {
    await Promise.all(runs.map(stop))
    await upstream.close()
    await idp.close()
    await rm(home, {recursive: true, force: true})
  })

  it('logs in with the device flow: code on stderr as a JSON event, approved elsewhere, then forwards; a restart restores it', async () => {
    const deviceHome = await mkdtemp(join(home, 'device-'))
    const args = [
      '--remote-auth',
      '--remote-auth-issuer',
      idp.issuer,
      '--remote-auth-flow',
      'device',
      '--remote-auth-resource',
      AUDIENCE,
    ]
    const run = await start(args, {}, deviceHome)
    const code = await waitFor(
      'the device code event',
      () => events(run).find((e) => e.event === 'device_code'),
      run,
    )
    assert.equal(typeof code.user_code, 'string')
    assert.ok(String(code.verification_uri).startsWith(idp.issuer))
    assert.equal(run.stdout().includes(String(code.user_code)), false, 'stdout is for the result')
    // The person approves on another device (the provider's real pages); the registration was
    // dynamic (RFC 7591) for the device grant, since no client id was given.
    assert.ok(events(run).some((e) => e.event === 'registered'))
    assert.equal(
      await approveDeviceLogin(String(code.verification_uri_complete), 'approve', 'erin'),
      'approved',
    )
    // The provider's polling interval is 5 s (RFC 8628 default).
    await waitFor('the login', () => events(run).find((e) => e.event === 'logged_in'), run, 30_000)
    const url = listening(run)
    const res = await fetch(`${url}/mcp`)
    assert.equal(res.status, 200)
    await res.body?.cancel()
    assert.deepEqual(upstream.calls.at(-1), {ok: true})
    await stop(run)

    // Saved and refreshed like a browser login: the next start needs nobody, even under CI.
    const again = await start(args, {CI: 'true'}, deviceHome)
    await waitFor('the restore', () => events(again).find((e) => e.event === 'restored'), again)
    assert.equal(
      events(again).some((e) => e.event === 'device_code'),
      false,
    )
    const res2 = await fetch(`${listening(again)}/mcp`)
    assert.equal(res2.status, 200)
    await res2.body?.cancel()
    await stop(again)
  })

  it('under CI, an automatic login fails at once (exit 2) naming the ways that need no person', async () => {
    const began = Date.now()
    const run = await start(['--remote-auth', '--remote-auth-issuer', idp.issuer], {CI: 'true'})
    assert.equal(await run.exited, 2)
    assert.ok(Date.now() - began < 10_000, 'no waiting for a human')
    assert.match(run.stderr(), /non-interactive \(CI or --non-interactive\)/)
    assert.match(run.stderr(), /--remote-auth-grant client_credentials/)
    assert.match(run.stderr(), /--remote-auth-flow device/)
    assert.equal(
      events(run).some((e) => e.event === 'login_url' || e.event === 'device_code'),
      false,
    )
    // --non-interactive does the same without CI.
    const flagged = await start([
      '--remote-auth',
      '--remote-auth-issuer',
      idp.issuer,
      '--non-interactive',
    ])
    assert.equal(await flagged.exited, 2)
  })

  it('refuses token passthrough together with --remote-auth (its token replaces the client one)', async () => {
    const run = await start([
      '--remote-auth',
      '--remote-auth-issuer',
      idp.issuer,
      '--remote-auth-skip-browser',
      '--remote-forward-incoming-token',
    ])
    assert.equal(await run.exited, 2)
    assert.match(run.stderr(), /--remote-forward-incoming-token: --remote-auth already supplies/)
  })

  it('uses client credentials from a secret file, and a wrong secret stops it with nothing forwarded', async () => {
    const secretFile = join(home, 'client-secret')
    await writeFile(secretFile, idp.client.clientSecret + '\n', {mode: 0o600})
    const common = [
      '--remote-auth',
      '--remote-auth-grant',
      'client_credentials',
      '--remote-auth-issuer',
      idp.issuer,
      '--remote-auth-client-id',
      idp.client.clientId,
      '--remote-auth-resource',
      AUDIENCE,
    ]
    const run = await start([...common, '--remote-auth-client-secret-file', secretFile], {
      CI: 'true',
    })
    await waitFor('the token', () => events(run).find((e) => e.event === 'logged_in'), run)
    const res = await fetch(`${listening(run)}/mcp`)
    assert.equal(res.status, 200)
    await res.body?.cancel()
    assert.deepEqual(upstream.calls.at(-1), {ok: true})
    await stop(run)

    const before = upstream.calls.length
    const wrong = join(home, 'wrong-secret')
    await writeFile(wrong, 'not-the-secret-VALUE-123', {mode: 0o600})
    const bad = await start([...common, '--remote-auth-client-secret-file', wrong], {CI: 'true'})
    assert.notEqual(await bad.exited, 0)
    assert.match(bad.stderr(), /client credentials grant .*invalid_client/)
    assert.equal(bad.stderr().includes('not-the-secret-VALUE-123'), false)
    assert.equal(upstream.calls.length, before, 'nothing reached the server')

    // The secret from the secrets store (encrypted file, password from the environment as in CI).
    const storeHome = await mkdtemp(join(home, 'store-'))
    const setSecret = runCli(['secret', 'set', 'ci-client'], storeHome, {}, idp.client.clientSecret)
    assert.equal(await setSecret.exited, 0, setSecret.stderr())
    const fromStore = runProxy(
      [
        'headless',
        '--target-uri',
        upstream.url,
        '--port',
        '0',
        '--json',
        ...common,
        '--remote-auth-client-secret-name',
        'ci-client',
      ],
      storeHome,
      {CI: 'true'},
    )
    runs.push(fromStore)
    await waitFor(
      'the token',
      () => events(fromStore).find((e) => e.event === 'logged_in'),
      fromStore,
    )
    const viaStore = await fetch(`${listening(fromStore)}/mcp`)
    assert.equal(viaStore.status, 200)
    await viaStore.body?.cancel()
    await stop(fromStore)

    // A secret typed on the command line would end up in CI logs and process listings.
    const plain = await start([...common, '--remote-auth-client-secret', 'x'])
    assert.equal(await plain.exited, 2)
    assert.match(plain.stderr(), /not on the command line/)
  })
})
