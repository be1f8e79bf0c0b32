import assert from 'node:assert/strict'
import {mkdtemp, rm} from 'node:fs/promises'
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
 * After a restart with a saved remote login (issue 18): requests that arrive while the proxy
 * restores it wait for the refresh instead of getting 503 "remote login has not finished yet".
 * The real command against a real oidc-provider whose token endpoint is made slow (a Koa
 * middleware in the provider) so the request surely arrives during the restore.
 */
const AUDIENCE = 'https://mcp.example.test/mcp'
const loginUrl = (run: Run) => /^\s+(http:\/\/\S+\/auth\?\S+)$/m.exec(run.stderr())?.[1]

describe('toolgate proxy --remote-auth: requests during the restore of a saved login wait', () => {
  let idp: Awaited<ReturnType<typeof startLoginProvider>>
  let upstream: ProtectedResource
  let home: string
  let tokenDelayMs = 0
  let delayedTokenCalls = 0
  const runs: Run[] = []
  before(async () => {
    idp = await startLoginProvider({
      // Long enough that the restored token is the one used (no refresh during the test).
      accessTokenTtl: 600,
      setup: async (provider) => {
        const app = provider as unknown as {
          use(mw: (ctx: {path: string}, next: () => Promise<void>) => Promise<void>): void
        }
        app.use(async (ctx, next) => {
          if (tokenDelayMs > 0 && ctx.path.endsWith('/token')) {
            delayedTokenCalls++
            await sleep(tokenDelayMs)
          }
          await next()
        })
      },
    })
    upstream = await startProtectedResource(idp.issuer, AUDIENCE)
    home = await mkdtemp(join(tmpdir(), 'toolgate-remote-restore-'))
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
        '--json',
        ...extra,
      ],
      home,
    )
    runs.push(run)
    return run
  }
  const listening = (run: Run) => /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(run.stdout())?.[1]

  it('answers 200 (not 503) to requests sent while the saved token is being refreshed', async () => {
    // A first run logs in through the provider's pages and saves the refresh token.
    const first = await start()
    const url = await waitFor(
      'the login URL',
      () => /"url":"(http:\/\/\S+\/auth\?[^"]+)"/.exec(first.stderr())?.[1] ?? loginUrl(first),
      first,
    )
    // An interactive login still pending: 503 with Retry-After, at once.
    const proxyUrl = await waitFor('the listening line', () => listening(first), first)
    const early = await fetch(`${proxyUrl}/mcp`)
    assert.equal(early.status, 503)
    assert.ok(early.headers.get('retry-after'))
    await early.body?.cancel()
    assert.equal((await driveLogin(url, {login: 'carol'})).status, 200)
    await waitFor(
      'the login',
      () => (/"event":"logged_in"/.test(first.stderr()) ? true : undefined),
      first,
    )
    await stop(first)

    // Restart with a slow token endpoint: the restore (a refresh grant) takes seconds.
    tokenDelayMs = 2500
    const second = await start()
    const proxyUrl2 = await waitFor('the listening line', () => listening(second), second)
    assert.doesNotMatch(
      second.stderr(),
      /"event":"restored"/,
      'the request must arrive during the restore',
    )
    const responses = await Promise.all(
      [0, 1, 2].map(async () => {
        const res = await fetch(`${proxyUrl2}/mcp`)
        await res.body?.cancel()
        return res.status
      }),
    )
    assert.deepEqual(responses, [200, 200, 200])
    assert.ok(delayedTokenCalls >= 1, 'the restore went through the slow token endpoint')
    assert.match(second.stderr(), /"event":"restored"/)
    assert.doesNotMatch(second.stderr(), /"event":"(login_url|browser_opening)"/, 'no new login')
    tokenDelayMs = 0
    await stop(second)
  })
})
