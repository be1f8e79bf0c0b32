import assert from 'node:assert/strict'
import {after, before, describe, it} from 'node:test'
import {startRemoteAuth, MemoryTokenStore} from '../../../src/lib/oauth/index.ts'
import type {RemoteAuthOptions} from '../../../src/lib/oauth/remote-auth-options.ts'
import {freePort, recordingUser, startLoginProvider, startProtectedResource, type ProtectedResource} from '../../helpers/oidc-login.ts'
import type {OidcProviderFixture} from '../../helpers/oidc-provider.ts'

const AUDIENCE = 'https://mcp.example.test/mcp'

async function options(target: string, extra: Partial<RemoteAuthOptions> = {}): Promise<RemoteAuthOptions> {
  return {targetUri: new URL(target), callbackPort: await freePort(), skipBrowser: true, timeoutMs: 20_000, resource: AUDIENCE, ...extra}
}

async function callUpstream(url: string, token: string): Promise<number> {
  const res = await fetch(url, {headers: {authorization: `Bearer ${token}`}})
  await res.body?.cancel()
  return res.status
}

describe('remote OAuth login against a real oidc-provider', () => {
  let idp: OidcProviderFixture & {tokenRequests: () => Array<{grant: string}>}
  let upstream: ProtectedResource
  before(async () => {
    idp = await startLoginProvider()
    upstream = await startProtectedResource(idp.issuer, AUDIENCE)
  })
  after(async () => {
    await upstream.close()
    await idp.close()
  })

  it('logs in through the issuer with a dynamically registered public client and PKCE', async () => {
    const user = recordingUser({login: 'alice'})
    const store = new MemoryTokenStore()
    const source = await startRemoteAuth(await options(upstream.url, {issuer: new URL(idp.issuer)}), {store, progress: user.sink})
    try {
      const token = await source.getToken()
      assert.equal(await callUpstream(upstream.url, token), 200)
      assert.deepEqual(user.events.map((e) => e.event), ['discovered', 'registered', 'login_url', 'waiting', 'logged_in'])
      assert.equal(user.events.at(-1)?.subject, 'alice')
      const loginUrl = new URL(user.events.find((e) => e.event === 'login_url')?.url as string)
      assert.equal(loginUrl.searchParams.get('code_challenge_method'), 'S256')
      assert.equal(loginUrl.searchParams.get('scope'), 'openid profile email')
      assert.equal(loginUrl.searchParams.get('resource'), AUDIENCE)
      assert.ok(loginUrl.searchParams.get('nonce'))
      const page = await user.logins[0]
      assert.equal(page?.status, 200)
      assert.match(page?.page ?? '', /Logged in as alice/)
      // The registration and the refresh token are both saved for the next start.
      assert.equal(store.entries.size, 2)
    } finally {
      await source.close()
    }
  })
})
