/**
 * Sessions an upstream creates belong to the principal whose request created them (issue 30,
 * finding 3): the proxy front in front of the real server-everything (streamable HTTP and legacy
 * SSE), tokens from a real oidc-provider for two users, alice and bob. Bob holding alice's
 * session id gets exactly what an unknown id gets, and nothing of his reaches the server.
 */
import {after, before, describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {createAuthenticator} from '../../../src/lib/auth/index.ts'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {oauthConfigFromOidc} from '../../../src/lib/proxy/incoming-auth.ts'
import {proxyConfigFromFlags} from '../../../src/lib/proxy/options.ts'
import {startProxy, type RunningProxy} from '../../../src/lib/proxy/proxy-server.ts'
import type {SessionLimits} from '../../../src/lib/sessions/session-table.ts'
import {
  startMcpUpstream,
  startRecordingUpstream,
  type McpUpstream,
} from '../../helpers/mcp-upstream.ts'
import {startOidcProvider, type OidcProviderFixture} from '../../helpers/oidc-provider.ts'

let idp: OidcProviderFixture
let http: McpUpstream
let sse: McpUpstream
const tokens: Record<string, string> = {}

before(async () => {
  idp = await startOidcProvider()
  ;[http, sse] = await Promise.all([startMcpUpstream('streamableHttp'), startMcpUpstream('sse')])
  tokens.alice = await idp.issueAccessToken({sub: 'alice'})
  tokens.bob = await idp.issueAccessToken({sub: 'bob'})
})
after(async () => {
  await Promise.all([http?.stop(), sse?.stop(), idp?.close()])
})

async function front(
  target: string,
  limits: Partial<SessionLimits> = {},
): Promise<{proxy: RunningProxy; logs: () => string}> {
  const logger = createMemoryLogger()
  const config = proxyConfigFromFlags(
    'guard',
    {
      'target-uri': target,
      host: '127.0.0.1',
      'max-request-body-size': 0,
      'oidc-issuer': idp.issuer,
      'oidc-audience': idp.audience,
    },
    {logger},
  )
  config.sessionLimits = limits
  const oauth = oauthConfigFromOidc(config.oidc!, config.resourceUrl)
  const proxy = await startProxy(config, {
    logger,
    authenticator: createAuthenticator(oauth, {logger}),
  })
  return {proxy, logs: () => logger.lines.join('\n')}
}

const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {protocolVersion: '2025-06-18', capabilities: {}, clientInfo: {name: 't', version: '1'}},
})

function call(
  url: string,
  token: string,
  init: {method?: string; body?: string; session?: string; accept?: string} = {},
): Promise<Response> {
  return fetch(url, {
    method: init.method ?? 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: init.accept ?? 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
      ...(init.session ? {'mcp-session-id': init.session} : {}),
    },
    ...(init.body !== undefined ? {body: init.body} : {}),
  })
}

async function initialize(url: string, token: string): Promise<string> {
  const res = await call(url, token, {body: INIT})
  assert.equal(res.status, 200)
  await res.body?.cancel()
  const sid = res.headers.get('mcp-session-id')
  assert.ok(sid)
  const note = await call(url, token, {
    body: '{"jsonrpc":"2.0","method":"notifications/initialized"}',
    session: sid,
  })
  await note.body?.cancel()
  return sid
}

describe('proxy front: upstream sessions belong to their creator', () => {
  it('streamable HTTP: another principal with the id gets 404 on POST, GET and DELETE, like an unknown id', async () => {
    const {proxy, logs} = await front(http.url)
    try {
      const mcp = `${proxy.url}/mcp`
      const sid = await initialize(mcp, tokens.alice!)
      const tries = (session: string) => [
        call(mcp, tokens.bob!, {body: '{"jsonrpc":"2.0","id":2,"method":"tools/list"}', session}),
        call(mcp, tokens.bob!, {method: 'GET', accept: 'text/event-stream', session}),
        call(mcp, tokens.bob!, {method: 'DELETE', session}),
      ]
      const stolen = await Promise.all(tries(sid))
      const unknown = await Promise.all(tries('no-such-session'))
      for (let i = 0; i < stolen.length; i++) {
        assert.equal(stolen[i]!.status, 404)
        assert.equal(unknown[i]!.status, 404)
        assert.equal(await stolen[i]!.text(), await unknown[i]!.text())
      }
      assert.match(logs(), /refused a session id presented by another principal/)
      assert.ok(!logs().includes(sid), 'the session id is not logged')
      // alice's session still works (bob's DELETE never reached the server) …
      const mine = await call(mcp, tokens.alice!, {
        body: '{"jsonrpc":"2.0","id":3,"method":"tools/list"}',
        session: sid,
      })
      assert.equal(mine.status, 200)
      assert.match(await mine.text(), /"tools"/)
      // … until she ends it herself.
      assert.equal((await call(mcp, tokens.alice!, {method: 'DELETE', session: sid})).status, 200)
      const after = await call(mcp, tokens.alice!, {
        body: '{"jsonrpc":"2.0","id":4,"method":"tools/list"}',
        session: sid,
      })
      assert.equal(after.status, 404)
      await after.body?.cancel()
    } finally {
      await proxy.close()
    }
  })

  it('legacy SSE: another principal cannot post into a session opened through the front', async () => {
    const {proxy} = await front(sse.url)
    try {
      const stream = await fetch(`${proxy.url}/sse`, {
        headers: {authorization: `Bearer ${tokens.alice}`, accept: 'text/event-stream'},
      })
      assert.equal(stream.status, 200)
      const reader = stream.body!.getReader()
      let text = ''
      while (!/event: endpoint\r?\ndata: \S+/.test(text))
        text += new TextDecoder().decode((await reader.read()).value)
      const endpoint = /event: endpoint\r?\ndata: (\S+)/.exec(text)![1]!
      const url = new URL(endpoint, proxy.url).href
      const bob = await call(url, tokens.bob!, {body: INIT})
      assert.equal(bob.status, 404)
      await bob.body?.cancel()
      const alice = await call(url, tokens.alice!, {body: INIT})
      assert.equal(alice.status, 202)
      await alice.body?.cancel()
      await reader.cancel()
      // Once her stream is closed the endpoint is no one's.
      await new Promise((r) => setTimeout(r, 200))
      const late = await call(url, tokens.alice!, {body: INIT})
      assert.equal(late.status, 404)
      await late.body?.cancel()
    } finally {
      await proxy.close()
    }
  })

  it("one caller's sessions are bounded (429 with Retry-After); another caller is unaffected", async () => {
    const {proxy} = await front(http.url, {maxPerPrincipal: 2, maxTotal: 10})
    try {
      const mcp = `${proxy.url}/mcp`
      await initialize(mcp, tokens.alice!)
      await initialize(mcp, tokens.alice!)
      const over = await call(mcp, tokens.alice!, {body: INIT})
      assert.equal(over.status, 429)
      assert.ok(Number(over.headers.get('retry-after')) >= 1)
      assert.match(await over.text(), /too many sessions for this caller \(2\)/)
      await initialize(mcp, tokens.bob!)
    } finally {
      await proxy.close()
    }
  })
})

describe('proxy front: the principal field toward the bridge', () => {
  it('a client-sent x-toolgate-principal never reaches a target', async () => {
    const upstream = await startRecordingUpstream()
    upstream.respond((_req, res) =>
      res.writeHead(200, {'content-type': 'application/json'}).end('{}'),
    )
    const {proxy} = await front(upstream.url)
    try {
      const res = await fetch(`${proxy.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${tokens.bob}`,
          'content-type': 'application/json',
          'x-toolgate-principal': Buffer.from('["x","alice"]').toString('base64url'),
        },
        body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
      })
      assert.equal(res.status, 200)
      await res.body?.cancel()
      assert.equal(upstream.requests.at(-1)!.headers['x-toolgate-principal'], undefined)
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })
})
