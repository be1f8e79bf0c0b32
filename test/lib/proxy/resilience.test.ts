import assert from 'node:assert/strict'
import {createServer, request as httpRequest, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {after, describe, it} from 'node:test'
import {streamResponseTransform} from '../../../src/lib/authz/list-response.ts'
import type {BearerAuthenticator} from '../../../src/lib/auth/types.ts'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {startProxy, type RunningProxy} from '../../../src/lib/proxy/proxy-server.ts'
import type {RequestInterceptor} from '../../../src/lib/proxy/types.ts'
import {loopbackProxyConfig} from '../../helpers/proxy-config.ts'

// A real HTTP target on loopback whose handler each test sets.
async function target(
  handler: (res: import('node:http').ServerResponse) => void,
): Promise<{url: string; server: Server; requests: () => number}> {
  let count = 0
  const server = createServer((_req, res) => {
    count++
    handler(res)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const {port} = server.address() as AddressInfo
  return {url: `http://127.0.0.1:${port}`, server, requests: () => count}
}

const closeServer = (s: Server) =>
  new Promise<void>((r) => {
    s.closeAllConnections()
    s.close(() => r())
  })

// The real authz stream rewriter: refuses coded or non-UTF-8 event streams by erroring its stream.
const authzRewriter: RequestInterceptor = {
  intercept: async () => ({
    action: 'forward',
    rewriteResponse: (_type, headers) =>
      streamResponseTransform((_kind, result) => result as Record<string, unknown>, {headers}),
  }),
}

describe('proxy resilience', () => {
  const cleanup: Array<() => Promise<void>> = []
  after(async () => {
    for (const c of cleanup.reverse()) await c()
  })

  for (const [name, headers, bytes] of [
    ['a gzip-coded', {'content-encoding': 'gzip'}, Buffer.from('xxxx')],
    ['a non-UTF-8', {}, Buffer.from([0x64, 0x61, 0x74, 0x61, 0x3a, 0xff, 0xfe, 0x0a, 0x0a])],
  ] as const) {
    it(`survives ${name} GET stream that the authz rewriter refuses (cuts that response, keeps serving)`, async () => {
      const t = await target((res) => {
        res.writeHead(200, {'content-type': 'text/event-stream', ...headers})
        res.write(bytes)
        setTimeout(() => res.end(), 100)
      })
      const proxy: RunningProxy = await startProxy(
        loopbackProxyConfig(t.url, {name: 'resilience', interceptor: authzRewriter}),
        {logger: createMemoryLogger()},
      )
      cleanup.push(
        () => proxy.close(),
        () => closeServer(t.server),
      )
      // The refused stream is cut (fetch reports it as terminated or as an empty/partial body)…
      await fetch(proxy.url + '/mcp', {headers: {accept: 'text/event-stream'}})
        .then((r) => r.text())
        .catch(() => 'cut')
      // …and the process is still here to answer the next request (an unhandled stream error
      // would have ended the test process before this line).
      const again = await fetch(proxy.url + '/mcp', {headers: {accept: 'text/event-stream'}})
        .then((r) => r.status)
        .catch(() => 0)
      assert.equal(again, 200)
      assert.equal(t.requests(), 2)
    })
  }

  it('never opens (or keeps) the upstream stream of a client that left during authentication', async () => {
    let upstreamOpen = false
    const t = await target((res) => {
      upstreamOpen = true
      res.writeHead(200, {'content-type': 'text/event-stream'})
      const tick = setInterval(() => res.write('data: {}\n\n'), 20)
      res.on('close', () => {
        clearInterval(tick)
        upstreamOpen = false
      })
    })
    let authenticated!: () => void
    const authDone = new Promise<void>((r) => (authenticated = r))
    // Stands in for a slow identity provider; the validator itself is tested against real ones.
    const slowAuthenticator: BearerAuthenticator = {
      authenticate: () =>
        new Promise((resolve) =>
          setTimeout(() => {
            resolve({ok: true, principal: {provider: 'p', subject: 'alice', claims: {}}})
            authenticated()
          }, 300),
        ),
      close: async () => {},
    }
    const proxy = await startProxy(
      loopbackProxyConfig(t.url, {
        name: 'departure',
        oidc: {issuer: 'https://idp.example', scopes: ['openid']},
      }),
      {logger: createMemoryLogger(), authenticator: slowAuthenticator},
    )
    cleanup.push(
      () => proxy.close(),
      () => closeServer(t.server),
    )
    const u = new URL(proxy.url)
    const req = httpRequest({
      host: u.hostname,
      port: u.port,
      path: '/mcp',
      headers: {accept: 'text/event-stream', authorization: 'Bearer abc'},
    })
    req.on('error', () => {})
    req.end()
    setTimeout(() => req.destroy(), 50)
    await authDone
    // Give a wrongly started forward ample time to connect and stream.
    await new Promise((r) => setTimeout(r, 500))
    assert.equal(upstreamOpen, false, 'no upstream stream is left open for a departed client')
  })
})
