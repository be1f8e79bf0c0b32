import assert from 'node:assert/strict'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {createServer} from 'node:http'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {setTimeout as sleep} from 'node:timers/promises'
import {isToolgateError} from '../../../src/lib/errors.ts'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {
  prepareRemoteAuth,
  startRemoteAuth,
  MemoryTokenStore,
  remoteAuthOptionsFromFlags,
} from '../../../src/lib/oauth/index.ts'
import {createOAuthHttp, type FetchLike, type OAuthHttp} from '../../../src/lib/oauth/oauth-http.ts'
import type {RemoteAuthOptions} from '../../../src/lib/oauth/remote-auth-options.ts'
import {
  freePort,
  recordingUser,
  startLoginProvider,
  startProtectedResource,
  type ProtectedResource,
} from '../../helpers/oidc-login.ts'

const AUDIENCE = 'https://mcp.example.test/mcp'
const NATIVE = {
  client_id: 'native-confidential',
  client_secret: 'native-secret-value-0123456789',
  secret: 'native-secret-value-0123456789',
}

async function options(
  target: string,
  extra: Partial<RemoteAuthOptions> = {},
): Promise<RemoteAuthOptions> {
  return {
    targetUri: new URL(target),
    callbackPort: await freePort(),
    skipBrowser: true,
    timeoutMs: 20_000,
    resource: AUDIENCE,
    ...extra,
  }
}

async function callUpstream(url: string, token: string): Promise<number> {
  const res = await fetch(url, {headers: {authorization: `Bearer ${token}`}})
  await res.body?.cancel()
  return res.status
}

/** The real guarded clients, with the registration responses (RFC 7591) copied off the wire. */
function tappedHttp(registrations: Array<Record<string, string>>): OAuthHttp {
  const http = createOAuthHttp({allowPrivateLearned: true})
  const tap =
    (f: FetchLike): FetchLike =>
    async (url, init) => {
      const res = await f(url, init)
      if (init?.method === 'POST' && new URL(url).pathname.endsWith('/reg'))
        registrations.push((await res.clone().json()) as Record<string, string>)
      return res
    }
  return {trusted: tap(http.trusted), learned: tap(http.learned), close: () => http.close()}
}

async function rejects(p: Promise<unknown>): Promise<Error & {code?: string}> {
  try {
    await p
  } catch (err) {
    return err as Error & {code?: string}
  }
  assert.fail('expected a rejection')
}

describe('remote OAuth login against a real oidc-provider', () => {
  let idp: Awaited<ReturnType<typeof startLoginProvider>>
  let upstream: ProtectedResource
  before(async () => {
    idp = await startLoginProvider({
      clients: [
        {
          client_id: NATIVE.client_id,
          client_secret: NATIVE.client_secret,
          application_type: 'native',
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          redirect_uris: ['http://127.0.0.1/callback'],
          token_endpoint_auth_method: 'client_secret_basic',
        },
      ],
    })
    upstream = await startProtectedResource(idp.issuer, AUDIENCE)
  })
  after(async () => {
    await upstream.close()
    await idp.close()
  })

  it('logs in through the issuer with a dynamically registered public client and PKCE', async () => {
    const user = recordingUser({login: 'alice'})
    const store = new MemoryTokenStore()
    const source = await startRemoteAuth(
      await options(upstream.url, {issuer: new URL(idp.issuer)}),
      {store, progress: user.sink},
    )
    try {
      const token = await source.getToken()
      assert.equal(await callUpstream(upstream.url, token), 200)
      assert.deepEqual(
        user.events.map((e) => e.event),
        ['discovered', 'registered', 'login_url', 'waiting', 'logged_in'],
      )
      assert.equal(user.events.at(-1)?.subject, 'alice')
      const loginUrl = new URL(user.events.find((e) => e.event === 'login_url')?.url as string)
      assert.equal(loginUrl.searchParams.get('code_challenge_method'), 'S256')
      assert.ok(loginUrl.searchParams.get('code_challenge'))
      assert.ok((loginUrl.searchParams.get('state') ?? '').length >= 32)
      assert.equal(loginUrl.searchParams.get('scope'), 'openid profile email')
      assert.equal(loginUrl.searchParams.get('resource'), AUDIENCE)
      assert.ok(loginUrl.searchParams.get('nonce'))
      const page = await user.logins[0]
      assert.equal(page?.status, 200)
      assert.match(page?.page ?? '', /Logged in as alice/)
      // The registration and the refresh token are both saved for the next start.
      assert.equal(store.entries.size, 2)
      const client = JSON.parse(
        [...store.entries.entries()].find(([k]) => k.endsWith('/client'))?.[1] as string,
      )
      assert.equal(client.token_endpoint_auth_method, 'none')
      // Nothing uses RFC 7592 management, so its credentials are not kept at rest.
      assert.deepEqual(Object.keys(client).sort(), [
        'client_id',
        'dynamic',
        'redirect_uri',
        'token_endpoint_auth_method',
      ])
      const refresh = JSON.parse(
        [...store.entries.entries()].find(([k]) => k.endsWith('/refresh'))?.[1] as string,
      )
      assert.deepEqual(
        {scopes: refresh.scopes, resource: refresh.resource},
        {scopes: ['openid', 'profile', 'email'], resource: AUDIENCE},
      )
    } finally {
      await source.close()
    }
  })

  it('keeps handing out working tokens across several 2 s expiries, one refresh for many callers', async () => {
    const user = recordingUser()
    const source = await startRemoteAuth(
      await options(upstream.url, {issuer: new URL(idp.issuer)}),
      {store: new MemoryTokenStore(), progress: user.sink},
    )
    try {
      const statuses: number[] = []
      const until = Date.now() + 6500
      while (Date.now() < until) {
        statuses.push(await callUpstream(upstream.url, await source.getToken()))
        await sleep(250)
      }
      assert.ok(
        statuses.every((s) => s === 200),
        `statuses: ${statuses.join(',')}`,
      )
      assert.ok(source.stats.refreshes >= 2, `refreshes: ${source.stats.refreshes}`)
      assert.equal(source.stats.logins, 1)

      // Let the token expire, then ask 25 times at once: one refresh serves all.
      await sleep(2100)
      const before = source.stats.refreshes
      const tokens = await Promise.all(Array.from({length: 25}, () => source.getToken()))
      assert.equal(new Set(tokens).size, 1)
      assert.equal(source.stats.refreshes - before, 1)
    } finally {
      await source.close()
    }
  })

  it('answers an upstream 401 with one refresh, and hands the newer token to late callers', async () => {
    const source = await startRemoteAuth(
      await options(upstream.url, {issuer: new URL(idp.issuer)}),
      {store: new MemoryTokenStore(), progress: recordingUser().sink},
    )
    try {
      const first = await source.getToken()
      const fresh = await source.onUnauthorized(first)
      assert.ok(fresh && fresh !== first)
      assert.equal(await callUpstream(upstream.url, fresh), 200)
      const refreshes = source.stats.refreshes
      assert.equal(await source.onUnauthorized(first), fresh)
      assert.equal(source.stats.refreshes, refreshes)
    } finally {
      await source.close()
    }
  })

  it('restarts from the saved login without a browser', async () => {
    const store = new MemoryTokenStore()
    const opts = await options(upstream.url, {issuer: new URL(idp.issuer)})
    const first = await startRemoteAuth(opts, {store, progress: recordingUser().sink})
    await first.close()

    const user = recordingUser({act: false})
    const second = await startRemoteAuth(opts, {store, progress: user.sink})
    try {
      assert.deepEqual(
        user.events.map((e) => e.event),
        ['discovered', 'restored'],
      )
      assert.equal(second.stats.logins, 0)
      assert.equal(await callUpstream(upstream.url, await second.getToken()), 200)
    } finally {
      await second.close()
    }
  })

  it('logs in again, saying why, when the scopes or the resource differ from the saved login', async () => {
    const table: Array<{name: string; change: Partial<RemoteAuthOptions>; reason?: RegExp}> = [
      {name: 'same scopes (other order) and resource', change: {scopes: ['profile', 'openid']}},
      {
        name: 'other scopes',
        change: {scopes: ['openid', 'email']},
        reason: /scopes changed from "openid profile" to "openid email" \(--remote-auth-scopes\)/,
      },
      {
        name: 'other resource',
        change: {scopes: ['openid', 'profile'], resource: 'https://other.example.test/mcp'},
        reason: new RegExp(
          `resource changed from ${AUDIENCE} to https://other\\.example\\.test/mcp \\(--remote-auth-resource\\)`,
        ),
      },
      {
        name: 'no resource',
        change: {scopes: ['openid', 'profile'], resource: undefined},
        reason: /resource changed from \S+ to \(none\)/,
      },
    ]
    for (const row of table) {
      const store = new MemoryTokenStore()
      const base = await options(upstream.url, {
        issuer: new URL(idp.issuer),
        scopes: ['openid', 'profile'],
      })
      const first = await startRemoteAuth(base, {store, progress: recordingUser().sink})
      await first.close()

      const user = recordingUser()
      const second = await startRemoteAuth({...base, ...row.change}, {store, progress: user.sink})
      try {
        const events = user.events.map((e) => e.event)
        if (!row.reason) {
          assert.deepEqual(events, ['discovered', 'restored'], row.name)
          assert.equal(second.stats.logins, 0, row.name)
          continue
        }
        assert.deepEqual(
          events,
          ['discovered', 'login_required', 'login_url', 'waiting', 'logged_in'],
          row.name,
        )
        assert.match(String(user.events[1]?.reason), row.reason, row.name)
        assert.equal(second.stats.logins, 1, row.name)
        assert.equal(second.stats.refreshes, 0, row.name)
        // The new login replaced the saved one: the next start with these flags needs no browser.
        const third = recordingUser({act: false})
        await (
          await startRemoteAuth({...base, ...row.change}, {store, progress: third.sink})
        ).close()
        assert.deepEqual(
          third.events.map((e) => e.event),
          ['discovered', 'restored'],
          row.name,
        )
      } finally {
        await second.close()
      }
    }
  })

  it('does not reuse a login saved without its scopes and resource (older records)', async () => {
    const store = new MemoryTokenStore()
    const opts = await options(upstream.url, {issuer: new URL(idp.issuer)})
    await (await startRemoteAuth(opts, {store, progress: recordingUser().sink})).close()
    const [name, text] = [...store.entries.entries()].find(([k]) => k.endsWith('/refresh')) as [
      string,
      string,
    ]
    const {scopes: _scopes, resource: _resource, ...old} = JSON.parse(text)
    store.entries.set(name, JSON.stringify(old))
    const user = recordingUser()
    const second = await startRemoteAuth(opts, {store, progress: user.sink})
    try {
      assert.deepEqual(
        user.events.map((e) => e.event),
        ['discovered', 'login_required', 'login_url', 'waiting', 'logged_in'],
      )
      assert.match(String(user.events[1]?.reason), /does not record the scopes and resource/)
    } finally {
      await second.close()
    }
  })

  it('drops the RFC 7592 registration access token of an older saved registration', async () => {
    const store = new MemoryTokenStore()
    const opts = await options(upstream.url, {issuer: new URL(idp.issuer)})
    await (await startRemoteAuth(opts, {store, progress: recordingUser().sink})).close()
    const [name, text] = [...store.entries.entries()].find(([k]) => k.endsWith('/client')) as [
      string,
      string,
    ]
    store.entries.set(
      name,
      JSON.stringify({
        ...JSON.parse(text),
        registration_access_token: 'old-management-token',
        registration_client_uri: `${idp.issuer}/reg/x`,
      }),
    )
    const user = recordingUser({act: false})
    await (await startRemoteAuth(opts, {store, progress: user.sink})).close()
    assert.deepEqual(
      user.events.map((e) => e.event),
      ['discovered', 'restored'],
    )
    assert.ok(!(store.entries.get(name) as string).includes('old-management-token'))
    assert.ok(!(store.entries.get(name) as string).includes('registration_client_uri'))
  })

  it('answers no-token while start() runs and never starts a second login for early callers', async () => {
    const user = recordingUser()
    const early: Array<Promise<unknown>> = []
    const ref: {source?: Awaited<ReturnType<typeof prepareRemoteAuth>>} = {}
    // A request arrives through the already-listening proxy while the person is logging in.
    const sink = (e: {event: string} & object) => {
      if (e.event === 'waiting' || e.event === 'discovered')
        early.push(
          ref.source!.getToken().then(
            () => 'token',
            (err: unknown) => err,
          ),
        )
      user.sink(e)
    }
    const source = (ref.source = await prepareRemoteAuth(
      await options(upstream.url, {issuer: new URL(idp.issuer)}),
      {store: new MemoryTokenStore(), progress: sink},
    ))
    try {
      const before = await source.getToken().catch((err: unknown) => err)
      assert.ok(isToolgateError(before, 'ERR_NO_UPSTREAM_TOKEN'))
      await source.start()
      const answers = await Promise.all(early)
      assert.equal(answers.length, 2)
      for (const a of answers) {
        assert.ok(isToolgateError(a, 'ERR_NO_UPSTREAM_TOKEN'), String(a))
        assert.match((a as Error).message, /has not finished yet/)
      }
      assert.equal(source.stats.logins, 1)
      assert.equal(user.events.filter((e) => e.event === 'login_url').length, 1)
      assert.equal(await callUpstream(upstream.url, await source.getToken()), 200)
    } finally {
      await source.close()
    }
  })

  it('registers again and logs in when the saved registration was revoked (RFC 7592 delete)', async () => {
    const store = new MemoryTokenStore()
    const opts = await options(upstream.url, {issuer: new URL(idp.issuer)})
    const registrations: Array<Record<string, string>> = []
    const first = await startRemoteAuth(opts, {
      store,
      progress: recordingUser().sink,
      http: tappedHttp(registrations),
    })
    await first.close()
    const saved = JSON.parse(
      [...store.entries.entries()].find(([k]) => k.endsWith('/client'))?.[1] as string,
    )
    // The test plays the server's administrator: the management credentials come off the wire.
    const management = registrations[0] as Record<string, string>
    assert.equal(management.client_id, saved.client_id)
    const del = await fetch(management.registration_client_uri as string, {
      method: 'DELETE',
      headers: {authorization: `Bearer ${management.registration_access_token}`},
    })
    assert.equal(del.status, 204)

    const user = recordingUser()
    const second = await startRemoteAuth(opts, {store, progress: user.sink})
    try {
      assert.deepEqual(
        user.events.map((e) => e.event),
        ['discovered', 'login_required', 'registered', 'login_url', 'waiting', 'logged_in'],
      )
      assert.notEqual(user.events.find((e) => e.event === 'registered')?.client_id, saved.client_id)
      assert.equal(second.stats.registrations, 1)
      assert.equal(await callUpstream(upstream.url, await second.getToken()), 200)
    } finally {
      await second.close()
    }
  })

  it('uses explicit authorize and token URLs with a pre-registered confidential client', async () => {
    const user = recordingUser({login: 'bob'})
    const opts = await options(upstream.url, {
      authorizeUrl: new URL(`${idp.issuer}/auth`),
      tokenUrl: new URL(`${idp.issuer}/token`),
      clientId: NATIVE.client_id,
      clientSecret: NATIVE.secret,
      // Plain OAuth has no default scopes; oidc-provider grants nothing for an empty request.
      scopes: ['read'],
    })
    const source = await startRemoteAuth(opts, {store: new MemoryTokenStore(), progress: user.sink})
    try {
      assert.equal(await callUpstream(upstream.url, await source.getToken()), 200)
      assert.equal(user.events[0]?.via, 'explicit')
      assert.ok(!user.events.some((e) => e.event === 'registered'))
      const url = new URL(user.events.find((e) => e.event === 'login_url')?.url as string)
      assert.equal(url.searchParams.get('client_id'), NATIVE.client_id)
      assert.equal(url.searchParams.get('scope'), 'read')
      assert.equal(url.searchParams.get('nonce'), null)
    } finally {
      await source.close()
    }
  })

  it('takes the client secret from flag, then file, then TOOLGATE_REMOTE_OAUTH_CLIENT_SECRET, and logs in with it', async () => {
    const base = {
      'remote-auth': true,
      'remote-auth-issuer': idp.issuer,
      'remote-auth-client-id': NATIVE.client_id,
      'remote-auth-skip-browser': true,
    }
    const env = {TOOLGATE_REMOTE_OAUTH_CLIENT_SECRET: 'from-env'}
    const dir = mkdtempSync(join(tmpdir(), 'toolgate-remote-secret-'))
    const secretFile = join(dir, 'secret')
    writeFileSync(secretFile, 'from-file\n', {mode: 0o600})
    const table: Array<[string, Record<string, string>, string]> = [
      [
        'flag beats file and env',
        {'remote-auth-client-secret': 'from-flag', 'remote-auth-client-secret-file': secretFile},
        'from-flag',
      ],
      ['file beats env', {'remote-auth-client-secret-file': secretFile}, 'from-file'],
      ['env last', {}, 'from-env'],
    ]
    for (const [name, flags, expected] of table) {
      const o = await remoteAuthOptionsFromFlags({...base, ...flags}, upstream.url, {env})
      assert.equal(o?.clientSecret, expected, name)
    }
    rmSync(dir, {recursive: true, force: true})
    // The real confidential login with the secret from the environment.
    const o = await remoteAuthOptionsFromFlags(
      {...base, 'remote-auth-callback-port': await freePort(), 'remote-auth-resource': AUDIENCE},
      upstream.url,
      {
        env: {TOOLGATE_REMOTE_OAUTH_CLIENT_SECRET: NATIVE.secret},
      },
    )
    const source = await startRemoteAuth(o as RemoteAuthOptions, {
      store: new MemoryTokenStore(),
      progress: recordingUser().sink,
    })
    try {
      assert.equal(await callUpstream(upstream.url, await source.getToken()), 200)
    } finally {
      await source.close()
    }
    // A wrong secret is reported as the server's invalid_client, without the secret.
    const wrong = await remoteAuthOptionsFromFlags(
      {
        ...base,
        'remote-auth-callback-port': await freePort(),
        'remote-auth-client-secret': 'wrong-secret-xyz',
      },
      upstream.url,
    )
    const err = await rejects(
      startRemoteAuth(wrong as RemoteAuthOptions, {
        store: new MemoryTokenStore(),
        progress: recordingUser().sink,
      }),
    )
    assert.equal(err.code, 'ERR_OAUTH_FLOW')
    assert.match(err.message, /invalid_client/)
    assert.doesNotMatch(err.message, /wrong-secret-xyz/)
  })

  it('finds the authorization server from the target 401 and its resource_metadata (RFC 9728)', async () => {
    const user = recordingUser()
    const source = await startRemoteAuth(await options(upstream.url, {resource: undefined}), {
      store: new MemoryTokenStore(),
      progress: user.sink,
    })
    try {
      assert.deepEqual(user.events[0], {
        event: 'discovered',
        issuer: idp.issuer,
        via: 'resource_metadata',
      })
      // The metadata's `resource` becomes the RFC 8707 resource, so the token fits the target.
      const url = new URL(user.events.find((e) => e.event === 'login_url')?.url as string)
      assert.equal(url.searchParams.get('resource'), AUDIENCE)
      assert.equal(await callUpstream(upstream.url, await source.getToken()), 200)
    } finally {
      await source.close()
    }
  })

  it('falls back to the realm, then to the well-known documents, when the challenge names no metadata', async () => {
    for (const [advertise, via] of [
      ['realm', 'realm'],
      ['none', 'well_known'],
    ] as const) {
      const target = await startProtectedResource(idp.issuer, AUDIENCE, {advertise})
      const user = recordingUser()
      try {
        const source = await startRemoteAuth(await options(target.url), {
          store: new MemoryTokenStore(),
          progress: user.sink,
        })
        await source.close()
        assert.equal(user.events[0]?.via, via)
        assert.equal(user.events[0]?.issuer, idp.issuer)
      } finally {
        await target.close()
      }
    }
  })

  it('refuses a learned authorization server on a private address when the typed URL is public', async () => {
    // The operator's URL counts as public here (allowPrivateLearned false), as it would for a
    // remote target; the resource metadata then points at 127.0.0.1, which must be refused.
    const http = createOAuthHttp({allowPrivateLearned: false, timeoutMs: 5000})
    const err = await rejects(
      startRemoteAuth(await options(upstream.url), {
        store: new MemoryTokenStore(),
        progress: recordingUser().sink,
        http,
      }),
    )
    assert.equal(err.code, 'ERR_OUTBOUND_BLOCKED')
    assert.match(err.message, /learned from a remote document/)
  })

  it('reports access_denied from the callback as a clear failure', async () => {
    const user = recordingUser({abort: true})
    const err = await rejects(
      startRemoteAuth(await options(upstream.url, {issuer: new URL(idp.issuer)}), {
        store: new MemoryTokenStore(),
        progress: user.sink,
      }),
    )
    assert.equal(err.code, 'ERR_OAUTH_DENIED')
    assert.match(err.message, /access_denied/)
    assert.match(err.message, /End-User aborted interaction/)
    const page = await user.logins[0]
    assert.equal(page?.status, 400)
    assert.match(page?.page ?? '', /access_denied/)
  })

  it('rejects a callback with a forged state and still completes the real login', async () => {
    const events: Array<Record<string, unknown>> = []
    const real = recordingUser()
    let forged: Promise<number> | undefined
    const sink = (e: {event: string} & object) => {
      events.push(e)
      const url = (e as {url?: string}).url
      if (e.event === 'login_url' && url) {
        const redirect = new URL(url).searchParams.get('redirect_uri') as string
        forged = fetch(`${redirect}?code=attacker-code&state=forged-state`).then(async (r) => {
          await r.body?.cancel()
          return r.status
        })
        // The real browser arrives after the forgery.
        void forged.then(() => real.sink(e))
      }
    }
    const source = await startRemoteAuth(
      await options(upstream.url, {issuer: new URL(idp.issuer)}),
      {store: new MemoryTokenStore(), progress: sink},
    )
    try {
      assert.equal(await forged, 400)
      assert.ok(events.some((e) => e.event === 'callback_rejected'))
      assert.equal(await callUpstream(upstream.url, await source.getToken()), 200)
    } finally {
      await source.close()
    }
  })

  it('gives up after the timeout with a clear message and releases the callback port', async () => {
    const port = await freePort()
    const err = await rejects(
      startRemoteAuth(
        await options(upstream.url, {
          issuer: new URL(idp.issuer),
          callbackPort: port,
          timeoutMs: 800,
        }),
        {
          store: new MemoryTokenStore(),
          progress: recordingUser({act: false}).sink,
        },
      ),
    )
    assert.equal(err.code, 'ERR_OAUTH_TIMEOUT')
    assert.match(err.message, /did not complete within 0\.8s/)
    const server = createServer()
    await new Promise<void>((resolve, reject) =>
      server.once('error', reject).listen(port, '127.0.0.1', () => resolve()),
    )
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })

  it('names the flag when the callback port is busy', async () => {
    const busy = createServer()
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', () => resolve()))
    const port = (busy.address() as {port: number}).port
    try {
      const err = await rejects(
        startRemoteAuth(
          await options(upstream.url, {issuer: new URL(idp.issuer), callbackPort: port}),
          {store: new MemoryTokenStore(), progress: recordingUser().sink},
        ),
      )
      assert.equal(err.code, 'ERR_ADDRESS_IN_USE')
      assert.match(
        err.message,
        new RegExp(`127\\.0\\.0\\.1:${port} is already in use.*--remote-auth-callback-port`),
      )
    } finally {
      await new Promise<void>((resolve) => busy.close(() => resolve()))
    }
  })

  it('starts one new login when the refresh token dies, answering no-token meanwhile', async () => {
    const store = new MemoryTokenStore()
    const user = recordingUser()
    const logger = createMemoryLogger()
    const source = await startRemoteAuth(
      await options(upstream.url, {issuer: new URL(idp.issuer)}),
      {store, progress: user.sink, logger},
    )
    try {
      const saved = JSON.parse(
        [...store.entries.entries()].find(([k]) => k.endsWith('/refresh'))?.[1] as string,
      )
      const revoke = await fetch(`${idp.issuer}/token/revocation`, {
        method: 'POST',
        headers: {'content-type': 'application/x-www-form-urlencoded'},
        body: new URLSearchParams({
          token: saved.refresh_token,
          token_type_hint: 'refresh_token',
          client_id: saved.client_id,
        }),
      })
      assert.equal(revoke.status, 200)
      await sleep(2100) // the access token expires
      const err = await rejects(source.getToken())
      assert.ok(isToolgateError(err, 'ERR_NO_UPSTREAM_TOKEN'))
      assert.match(err.message, /expired or was revoked/)
      // While the background login runs, callers are refused at once and no second login starts.
      await rejects(source.getToken())
      assert.equal(source.stats.logins, 2)
      await user.logins[1]
      for (let i = 0; i < 50 && !user.events.filter((e) => e.event === 'logged_in')[1]; i++)
        await sleep(100)
      assert.equal(await callUpstream(upstream.url, await source.getToken()), 200)
      assert.equal(source.stats.logins, 2)
      // Nothing secret reached the events or the log.
      const seen = JSON.stringify(user.events) + logger.lines.join('\n')
      assert.ok(!seen.includes(saved.refresh_token))
      assert.ok(!seen.includes(await source.getToken()))
    } finally {
      await source.close()
    }
  })

  it('says so clearly when the server offers no dynamic registration and no client id was given', async () => {
    const noReg = await startLoginProvider({registration: false})
    try {
      const err = await rejects(
        startRemoteAuth(await options(upstream.url, {issuer: new URL(noReg.issuer)}), {
          store: new MemoryTokenStore(),
          progress: recordingUser().sink,
        }),
      )
      assert.equal(err.code, 'ERR_OAUTH_FLOW')
      assert.match(err.message, /offers no dynamic client registration.*--remote-auth-client-id/)
    } finally {
      await noReg.close()
    }
  })
})
