import assert from 'node:assert/strict'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {connect, type Socket} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {setTimeout as sleep} from 'node:timers/promises'
import {createAuthenticator} from '../../../src/lib/auth/index.ts'
import {loadAuthzInterceptor} from '../../../src/lib/authz/index.ts'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {findDuplicateKey, unambiguousJsonText} from '../../../src/lib/mcp/strict-json.ts'
import {oauthConfigFromOidc} from '../../../src/lib/proxy/incoming-auth.ts'
import {proxyConfigFromFlags} from '../../../src/lib/proxy/options.ts'
import {
  startProxy,
  type ProxyConfig,
  type RunningProxy,
} from '../../../src/lib/proxy/proxy-server.ts'
import {refusedRequestTarget} from '../../../src/lib/proxy/request-target.ts'
import {loopbackProxyConfig} from '../../helpers/proxy-config.ts'
import {startRecordingUpstream, type RecordingUpstream} from '../../helpers/mcp-upstream.ts'
import {startOidcProvider, type OidcProviderFixture} from '../../helpers/oidc-provider.ts'

/**
 * Attacks on the proxy (issue: hardening), each through the real proxy in front of a real
 * recording upstream: what a hostile client sends, and that nothing unjudged reaches the target.
 */
const logger = createMemoryLogger()

/** Sends raw bytes on one connection and returns everything the proxy wrote back. */
async function raw(url: string, bytes: string | Buffer, waitMs = 3000): Promise<string> {
  const {port} = new URL(url)
  const socket = connect(Number(port), '127.0.0.1')
  let out = ''
  socket.on('data', (d) => (out += d.toString()))
  socket.on('error', () => undefined)
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  socket.write(bytes)
  await new Promise<void>((resolve) => {
    const t = setTimeout(resolve, waitMs)
    socket.once('close', () => {
      clearTimeout(t)
      resolve()
    })
  })
  socket.destroy()
  return out
}

const rpc = (body: string, headers: Record<string, string> = {}, method = 'POST') => ({
  method,
  headers: {'content-type': 'application/json', accept: 'application/json', ...headers},
  body,
})

describe('proxy hardening: authorization judges exactly the bytes it forwards', () => {
  let idp: OidcProviderFixture
  let upstream: RecordingUpstream
  let proxy: RunningProxy
  let token: string
  let dir: string
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tg-harden-'))
    const policy = join(dir, 'authz.json')
    await writeFile(
      policy,
      JSON.stringify({
        version: '1.0',
        type: 'cedarv1',
        cedar: {
          policies: ['permit(principal, action == Action::"call_tool", resource == Tool::"safe");'],
          entities_json: '[]',
        },
      }),
    )
    idp = await startOidcProvider()
    token = await idp.issueAccessToken({sub: 'mallory'})
    upstream = await startRecordingUpstream()
    upstream.respond((req, res) => {
      req.resume()
      req.on('end', () => {
        res.writeHead(200, {'content-type': 'application/json'})
        // tools/list for annotations: one tool each
        res.end('{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"safe"},{"name":"deploy"}]}}')
      })
    })
    const config = proxyConfigFromFlags(
      'harden',
      {
        'target-uri': upstream.url + '/base',
        host: '127.0.0.1',
        'max-request-body-size': 0,
        'oidc-issuer': idp.issuer,
        'oidc-audience': idp.audience,
      },
      {logger},
    )
    config.interceptor = await loadAuthzInterceptor(policy, {logger})
    config.bodyIdleMs = 500
    const oauth = oauthConfigFromOidc(config.oidc!, config.resourceUrl)
    for (const p of oauth.providers) p.allowPrivateIP = true
    proxy = await startProxy(config, {logger, authenticator: createAuthenticator(oauth, {logger})})
  })
  after(async () => {
    await proxy.close()
    await upstream.close()
    await idp.close()
    await rm(dir, {recursive: true, force: true})
  })

  const send = async (
    init: {method: string; headers: Record<string, string>; body?: string},
    path = '/mcp',
  ) => {
    const res = await fetch(proxy.url + path, {
      ...init,
      headers: {...init.headers, authorization: `Bearer ${token}`},
    })
    return {status: res.status, text: await res.text()}
  }
  const forwardedCalls = () =>
    upstream.requests.filter((r) => r.body.toString().includes('"tools/call"'))

  it('a permitted call goes through (control)', async () => {
    const r = await send(
      rpc('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe","arguments":{}}}'),
    )
    assert.equal(r.status, 200, r.text)
    assert.equal(forwardedCalls().length, 1)
  })

  const duplicates: Array<[string, string]> = [
    [
      'a duplicated params.name',
      '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"safe","arguments":{},"name":"deploy"}}',
    ],
    [
      'a duplicated method',
      '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"safe"},"method":"tools/call"}',
    ],
    [
      'a nested duplicate in arguments',
      '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"safe","arguments":{"env":{"x":1,"x":2}}}}',
    ],
    [
      'a duplicate spelled with an escape',
      '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"safe","\\u006eame":"deploy"}}',
    ],
  ]
  for (const [what, body] of duplicates) {
    it(`refuses ${what} with 400 and forwards nothing`, async () => {
      const before = forwardedCalls().length
      const r = await send(rpc(body))
      assert.equal(r.status, 400, r.text)
      assert.match(r.text, /duplicate key/)
      assert.equal(forwardedCalls().length, before)
    })
  }

  it('refuses a BOM, invalid UTF-8 and a batch, forwarding nothing', async () => {
    const before = upstream.requests.length
    const call = '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"deploy"}}'
    for (const body of [
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(call)]),
      Buffer.concat([Buffer.from(call.slice(0, -2)), Buffer.from([0xff, 0xfe]), Buffer.from('}}')]),
      Buffer.from(`[${call}]`),
    ]) {
      const res = await fetch(proxy.url + '/mcp', {
        method: 'POST',
        headers: {'content-type': 'application/json', authorization: `Bearer ${token}`},
        body,
      })
      assert.equal(res.status, 400, await res.text())
    }
    assert.equal(upstream.requests.length, before)
  })

  it('refuses a body on GET/DELETE/OPTIONS and method-override headers', async () => {
    const before = upstream.requests.length
    const call = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"deploy"}}'
    for (const method of ['DELETE', 'OPTIONS']) {
      const r = await send(rpc(call, {}, method))
      assert.equal(r.status, 400, `${method}: ${r.text}`)
    }
    // fetch will not send a GET body: write it by hand.
    const get = await raw(
      proxy.url,
      `GET /mcp HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\ncontent-type: application/json\r\ncontent-length: ${call.length}\r\nconnection: close\r\n\r\n${call}`,
    )
    assert.match(get, /^HTTP\/1\.1 400/)
    for (const h of ['x-http-method-override', 'x-method-override', 'x-http-method']) {
      const r = await send(rpc('{"jsonrpc":"2.0","id":8,"method":"ping"}', {[h]: 'DELETE'}))
      assert.equal(r.status, 400, h)
      assert.match(r.text, new RegExp(h))
    }
    assert.equal(upstream.requests.length, before)
  })

  it('refuses paths that could leave the --target-uri base path', async () => {
    const before = upstream.requests.length
    for (const path of [
      '/a/../../admin',
      '/%2e%2e/admin',
      '/mcp/..%2fadmin',
      '/./mcp',
      '/mcp%2F..',
      '/a\\..\\b',
    ]) {
      const out = await raw(
        proxy.url,
        `POST ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}`,
      )
      assert.match(out, /^HTTP\/1\.1 400/, path)
    }
    assert.equal(upstream.requests.length, before)
    assert.equal(refusedRequestTarget('/mcp?x=../y'), undefined, 'a query may hold anything')
    assert.ok(refusedRequestTarget('http://evil/mcp'))
    assert.ok(refusedRequestTarget('//evil/mcp'))
  })

  it('a stalled body gets 408 and its connection is closed', async () => {
    const out = await raw(
      proxy.url,
      `POST /mcp HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"jsonrpc":`,
      5000,
    )
    assert.match(out, /^HTTP\/1\.1 408/)
    assert.match(out, /request body timeout/)
  })

  it('the duplicate-key finder and strict decoding on their own', () => {
    assert.deepEqual(findDuplicateKey('{"a":{"b":1,"b":2}}'), {key: 'b', path: '$.a'})
    assert.equal(findDuplicateKey('{"a":"\\",\\"a\\":1","b":[{"a":1},{"a":2}]}'), undefined)
    assert.deepEqual(findDuplicateKey('[{"x":1},{"y":1,"y":2}]'), {key: 'y', path: '$[]'})
    assert.deepEqual(unambiguousJsonText(Buffer.from('{"a":1}')), {text: '{"a":1}'})
  })
})

describe('proxy hardening: a slow or hostile client cannot exhaust it', () => {
  let upstream: RecordingUpstream
  const proxies: RunningProxy[] = []
  const start = async (extra: Partial<ProxyConfig> = {}) => {
    const p = await startProxy(loopbackProxyConfig(upstream.url, extra), {logger})
    proxies.push(p)
    return p
  }
  before(async () => {
    upstream = await startRecordingUpstream()
  })
  after(async () => {
    await Promise.all(proxies.map((p) => p.close()))
    await upstream.close()
  })

  it('answers 503 past --max-connections, and serves again when connections close', async () => {
    const p = await start({maxConnections: 3})
    const idle: Socket[] = []
    for (let i = 0; i < 3; i++) {
      const s = connect(p.port, '127.0.0.1')
      s.on('error', () => undefined)
      await new Promise<void>((resolve) => s.once('connect', () => resolve()))
      idle.push(s)
    }
    await sleep(100)
    const over = await raw(p.url, 'GET /mcp HTTP/1.1\r\nhost: x\r\n\r\n')
    assert.match(over, /^HTTP\/1\.1 503/)
    assert.match(over, /too many connections/)
    for (const s of idle) s.destroy()
    await sleep(200)
    const res = await fetch(p.url + '/mcp')
    assert.equal(res.status, 200)
    await res.body?.cancel()
  })

  it('keeps 431 for oversized headers (JSON, and the OIDC challenge) and 400 for garbage', async () => {
    const p = await start({oidc: {issuer: 'http://127.0.0.1:9', scopes: ['openid']}})
    const big = await raw(
      p.url,
      `GET /mcp HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${'a'.repeat(40_000)}\r\n\r\n`,
    )
    assert.match(big, /^HTTP\/1\.1 431/)
    assert.match(big, /www-authenticate: Bearer realm="http:\/\/127\.0\.0\.1:9"/i)
    assert.match(big, /\{"error":"request header fields too large"\}/)
    const junk = await raw(p.url, 'NOT HTTP AT ALL\r\n\r\n')
    assert.match(junk, /^HTTP\/1\.1 400/)
    assert.match(junk, /\{"error":"bad request"\}/)
  })

  it('forwards a request with Expect: 100-continue (curl does this above 1 MiB)', async () => {
    const p = await start()
    const body = 'x'.repeat(2 * 1024 * 1024)
    // fetch refuses to send `expect` itself: speak HTTP/1.1 by hand, as curl does.
    const sock = connect(p.port, '127.0.0.1')
    let text = ''
    sock.on('data', (d) => (text += d.toString()))
    await new Promise<void>((r) => sock.once('connect', () => r()))
    sock.write(
      `POST /mcp HTTP/1.1\r\nhost: x\r\ncontent-length: ${body.length}\r\nexpect: 100-continue\r\nconnection: close\r\n\r\n`,
    )
    const until = Date.now() + 10_000
    while (!text.includes('100 Continue') && Date.now() < until) await sleep(20)
    assert.match(text, /^HTTP\/1\.1 100 Continue/)
    sock.write(body)
    await new Promise<void>((r) => sock.once('close', () => r()))
    assert.match(text, /HTTP\/1\.1 200 OK/)
    const last = upstream.requests.at(-1)!
    assert.equal(last.headers.expect, undefined)
  })

  it('answers 408 (JSON) to a request head that does not arrive in time (slowloris)', async () => {
    const p = await start({serverLimits: {headersTimeout: 400, connectionsCheckingInterval: 100}})
    const out = await raw(p.url, 'GET /mcp HTTP/1.1\r\nhost: x\r\nx-slow: a', 5000)
    assert.match(out, /^HTTP\/1\.1 408/)
    assert.match(out, /\{"error":"request timeout"\}/)
  })

  it('never cuts a long SSE response, however short the request limits', async () => {
    upstream.respond((req, res) => {
      req.resume()
      res.writeHead(200, {'content-type': 'text/event-stream'})
      let n = 0
      const tick = setInterval(() => {
        res.write(`data: {"n":${n}}\n\n`)
        if (++n === 12) {
          clearInterval(tick)
          res.end()
        }
      }, 250)
    })
    const p = await start({
      serverLimits: {headersTimeout: 500, requestTimeout: 500, connectionsCheckingInterval: 100},
      bodyIdleMs: 300,
    })
    const res = await fetch(p.url + '/mcp', {
      method: 'POST',
      headers: {'content-type': 'application/json', accept: 'text/event-stream'},
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    })
    const text = await res.text() // 3 s of events, six times the request limits
    assert.equal(text.match(/^data: /gm)?.length, 12)
    upstream.respond((req, res) => {
      req.resume()
      res.writeHead(200, {'content-type': 'application/json'})
      res.end('{"ok":true}')
    })
  })

  it('refuses to start with --require-auth and no incoming authentication', () => {
    assert.throws(
      () =>
        proxyConfigFromFlags(
          'x',
          {
            'target-uri': upstream.url,
            host: '0.0.0.0',
            'max-request-body-size': 0,
            'require-auth': true,
          },
          {logger},
        ),
      /--require-auth: no incoming authentication/,
    )
  })

  it('warns loudly when it listens on a non-loopback address without incoming auth', async () => {
    const mem = createMemoryLogger()
    const p = await startProxy(loopbackProxyConfig(upstream.url, {host: '0.0.0.0'}), {logger: mem})
    proxies.push(p)
    assert.ok(
      mem.lines.some((l) => /WITHOUT incoming authentication/.test(l)),
      mem.lines.join('\n'),
    )
  })
})
