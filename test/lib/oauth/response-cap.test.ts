import assert from 'node:assert/strict'
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'
import {after, describe, it} from 'node:test'
import {MemoryTokenStore, startRemoteAuth} from '../../../src/lib/oauth/index.ts'
import {DEFAULT_OAUTH_MAX_BYTES} from '../../../src/lib/oauth/oauth-http.ts'
import type {RemoteAuthOptions} from '../../../src/lib/oauth/remote-auth-options.ts'
import {freePort} from '../../helpers/oidc-login.ts'

/**
 * Every body the remote login reads (metadata, registration, token responses) is capped. The
 * servers here are hostile stand-ins that no real authorization server can play: they answer with
 * JSON that never ends, or declare a length over the cap and then stall. Without the cap the
 * login would read until the 10 s outbound timeout (or memory) ran out; with it, it stops at once
 * and says why.
 */

type Misbehaviour = 'endless' | 'declared'

/** Sends `{"padding":"xxxx…` forever (chunked), or declares 2 MiB and sends one chunk. */
function misbehave(res: ServerResponse, how: Misbehaviour): void {
  if (how === 'declared') {
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': String(2 * DEFAULT_OAUTH_MAX_BYTES),
    })
    res.write('{"padding":"')
    return // and stall: only a cap that trusts the declared length stops before the timeout
  }
  res.writeHead(200, {'content-type': 'application/json'})
  res.write('{"padding":"')
  const chunk = Buffer.alloc(64 * 1024, 'x')
  const pump = () => {
    while (!res.destroyed && res.write(chunk));
    if (!res.destroyed) res.once('drain', pump)
  }
  pump()
}

interface Hostile {
  url: string
  close(): Promise<void>
}

async function serve(
  handler: (req: IncomingMessage, res: ServerResponse, base: string) => void,
): Promise<Hostile> {
  let base = ''
  const server: Server = createServer((req, res) => handler(req, res, base))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url: base,
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

async function rejects(p: Promise<unknown>): Promise<Error & {code?: string}> {
  try {
    await p
  } catch (err) {
    return err as Error & {code?: string}
  }
  assert.fail('expected a rejection')
}

const exceeds = new RegExp(
  `response from 127\\.0\\.0\\.1:\\d+ exceeds ${DEFAULT_OAUTH_MAX_BYTES} bytes`,
)

describe('remote login caps every response body it reads', () => {
  const servers: Hostile[] = []
  after(async () => {
    await Promise.all(servers.map((s) => s.close()))
  })

  for (const how of ['endless', 'declared'] as const) {
    it(`stops discovery at the cap when the issuer's metadata is ${how === 'endless' ? 'endless' : 'declared too large'}`, async () => {
      const issuer = await serve((_req, res) => misbehave(res, how))
      servers.push(issuer)
      const options: RemoteAuthOptions = {
        targetUri: new URL(`${issuer.url}/mcp`),
        issuer: new URL(issuer.url),
        callbackPort: await freePort(),
        skipBrowser: true,
        timeoutMs: 20_000,
      }
      const err = await rejects(
        startRemoteAuth(options, {store: new MemoryTokenStore(), progress: () => {}}),
      )
      assert.equal(err.code, 'ERR_OAUTH_FLOW')
      // Both discovery documents (OIDC, then RFC 8414) were refused for their size, not a timeout.
      assert.match(err.message, /openid-configuration: response from .* exceeds/)
      assert.match(err.message, /oauth-authorization-server: response from .* exceeds/)
      assert.doesNotMatch(err.message, /timed out/)
    })

    it(`stops the code exchange at the cap when the token response is ${how === 'endless' ? 'endless' : 'declared too large'}`, async () => {
      const as = await serve((req, res) => {
        if (req.method === 'POST' && req.url === '/token') return misbehave(res, how)
        res.writeHead(404).end()
      })
      servers.push(as)
      const options: RemoteAuthOptions = {
        targetUri: new URL(`${as.url}/mcp`),
        authorizeUrl: new URL(`${as.url}/authorize`),
        tokenUrl: new URL(`${as.url}/token`),
        clientId: 'typed-client',
        callbackPort: await freePort(),
        skipBrowser: true,
        timeoutMs: 20_000,
      }
      // The "browser": the authorization server would redirect back with a code and the state.
      const progress = (e: {event: string; url?: string}) => {
        if (e.event !== 'login_url' || !e.url) return
        const login = new URL(e.url)
        const back = new URL(login.searchParams.get('redirect_uri') as string)
        back.searchParams.set('code', 'a-code')
        back.searchParams.set('state', login.searchParams.get('state') as string)
        fetch(back).then(
          (r) => r.body?.cancel(),
          () => {},
        )
      }
      const err = await rejects(startRemoteAuth(options, {store: new MemoryTokenStore(), progress}))
      assert.equal(err.code, 'ERR_OUTBOUND_FAILED')
      assert.match(err.message, /^code exchange at the token endpoint failed: /)
      assert.match(err.message, exceeds)
    })
  }
})
