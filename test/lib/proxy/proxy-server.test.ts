import assert from 'node:assert/strict'
import {request as httpRequest} from 'node:http'
import {after, before, describe, it} from 'node:test'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {
  startProxy,
  type ProxyConfig,
  type RunningProxy,
} from '../../../src/lib/proxy/proxy-server.ts'
import {parseForwardHeaders} from '../../../src/lib/proxy/forward-headers.ts'
import {staticTokenSource} from '../../../src/lib/proxy/outgoing-auth.ts'
import {
  freePort,
  startRecordingUpstream,
  type RecordingUpstream,
} from '../../helpers/mcp-upstream.ts'
import {loopbackProxyConfig} from '../../helpers/proxy-config.ts'

/** Raw HTTP client: lets a test send exactly the headers it wants (duplicates, hop-by-hop). */
function send(
  url: string,
  opts: {
    method?: string
    path?: string
    headers?: Record<string, string | string[]>
    body?: Buffer | string
    chunked?: Buffer[]
  } = {},
): Promise<{status: number; headers: Record<string, string | string[] | undefined>; body: string}> {
  return new Promise((resolve, reject) => {
    const u = new URL(url)
    const req = httpRequest(
      {
        host: u.hostname,
        port: u.port,
        method: opts.method ?? 'POST',
        path: opts.path ?? '/mcp',
        headers: opts.headers ?? {},
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString(),
          }),
        )
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    if (opts.chunked) {
      for (const c of opts.chunked) req.write(c)
      req.end()
    } else req.end(opts.body)
  })
}

async function proxyFor(upstream: string, extra: Partial<ProxyConfig> = {}) {
  const logger = createMemoryLogger()
  const proxy = await startProxy(loopbackProxyConfig(upstream, {name: 'test', ...extra}), {logger})
  return {proxy, logger}
}

describe('proxy forwarding', () => {
  let upstream: RecordingUpstream
  let proxy: RunningProxy
  before(async () => {
    upstream = await startRecordingUpstream()
    ;({proxy} = await proxyFor(upstream.url))
  })
  after(async () => {
    await proxy?.close()
    await upstream?.close()
  })

  it('drops hop-by-hop headers and those named in Connection, keeps end-to-end ones (RFC 9110 §7.6.1)', async () => {
    upstream.respond((_req, res) => {
      res.writeHead(200, {
        'content-type': 'application/json',
        'x-hop': 'secret',
        connection: 'x-hop',
        'x-end': 'kept',
      })
      res.end('{}')
    })
    const before = upstream.requests.length
    const res = await send(proxy.url, {
      headers: {
        'content-type': 'application/json',
        connection: 'keep-alive, x-private',
        'x-private': 'must-not-pass',
        'keep-alive': 'timeout=5',
        'proxy-authorization': 'Basic abc',
        te: 'trailers',
        'x-custom': 'passes',
      },
      body: '{}',
    })
    assert.equal(res.status, 200)
    const rec = upstream.requests[before]!
    assert.equal(rec.headers['x-custom'], 'passes')
    for (const h of ['x-private', 'keep-alive', 'proxy-authorization', 'te'])
      assert.equal(rec.headers[h], undefined, h)
    assert.equal(rec.headers.host, new URL(upstream.url).host)
    assert.equal(res.headers['x-hop'], undefined)
    assert.equal(res.headers['x-end'], 'kept')
  })

  it('drops client-sent Forwarded, X-Forwarded-* and X-Real-IP so the target cannot be told a spoofed origin', async () => {
    upstream.respond((_req, res) => res.end('ok'))
    const before = upstream.requests.length
    const spoofed = {
      forwarded: 'for=203.0.113.7;proto=https;host=admin.example',
      'x-forwarded-for': '203.0.113.7',
      'x-forwarded-host': 'admin.example',
      'x-forwarded-proto': 'https',
      'X-Forwarded-Prefix': '/admin',
      'x-real-ip': '203.0.113.7',
    }
    const res = await send(proxy.url, {method: 'GET', headers: {...spoofed, 'x-custom': 'passes'}})
    assert.equal(res.status, 200)
    const rec = upstream.requests[before]!
    for (const name of Object.keys(spoofed))
      assert.equal(rec.headers[name.toLowerCase()], undefined, name)
    assert.equal(rec.headers['x-custom'], 'passes')
  })

  it('passes MCP session, protocol-version, Mcp-* and Last-Event-ID headers both ways', async () => {
    // The session is created through the proxy first: an id it never saw created is refused.
    upstream.respond((_req, res) => {
      res.writeHead(200, {'content-type': 'application/json', 'mcp-session-id': 'sess-1'})
      res.end('{}')
    })
    await send(proxy.url, {body: '{"jsonrpc":"2.0","id":0,"method":"initialize"}'})
    upstream.respond((_req, res) => {
      res.writeHead(200, {
        'content-type': 'application/json',
        'mcp-session-id': 'sess-2',
        'mcp-protocol-version': '2025-06-18',
        'mcp-extra': 'y',
      })
      res.end('{}')
    })
    const before = upstream.requests.length
    const res = await send(proxy.url, {
      method: 'GET',
      headers: {
        'mcp-session-id': 'sess-1',
        'mcp-protocol-version': '2025-06-18',
        'mcp-other': 'x',
        'last-event-id': 'ev-9',
        accept: 'text/event-stream',
      },
    })
    const rec = upstream.requests[before]!
    assert.equal(rec.headers['mcp-session-id'], 'sess-1')
    assert.equal(rec.headers['mcp-protocol-version'], '2025-06-18')
    assert.equal(rec.headers['mcp-other'], 'x')
    assert.equal(rec.headers['last-event-id'], 'ev-9')
    assert.equal(res.headers['mcp-session-id'], 'sess-2')
    assert.equal(res.headers['mcp-protocol-version'], '2025-06-18')
    assert.equal(res.headers['mcp-extra'], 'y')
  })

  it('forwards the path and query unchanged and the client Authorization when no outgoing auth is set', async () => {
    upstream.respond((_req, res) => res.end('ok'))
    const before = upstream.requests.length
    await send(proxy.url, {
      method: 'GET',
      path: '/mcp/x?a=1&b=%2F',
      headers: {authorization: 'Bearer client-token'},
    })
    const rec = upstream.requests[before]!
    assert.equal(rec.url, '/mcp/x?a=1&b=%2F')
    assert.equal(rec.headers.authorization, 'Bearer client-token')
  })

  it('streams a chunked request body to the target without buffering it first', async () => {
    upstream.respond((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => res.end(String(Buffer.concat(chunks).length)))
    })
    const res = await send(proxy.url, {chunked: [Buffer.alloc(1000, 1), Buffer.alloc(2000, 2)]})
    assert.equal(res.status, 200)
    assert.equal(res.body, '3000')
  })
})

describe('proxy target path prefix', () => {
  it('joins the target URI path with the request path', async () => {
    const upstream = await startRecordingUpstream()
    const {proxy} = await proxyFor(upstream.url + '/base/')
    try {
      await send(proxy.url, {method: 'GET', path: '/mcp?x=1'})
      assert.equal(upstream.requests[0]!.url, '/base/mcp?x=1')
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })
})

describe('request body limit', () => {
  let upstream: RecordingUpstream
  before(async () => {
    upstream = await startRecordingUpstream()
    upstream.respond((req, res) => {
      let n = 0
      req.on('data', (c: Buffer) => (n += c.length))
      req.on('end', () => res.end(String(n)))
      req.on('error', () => undefined)
    })
  })
  after(async () => upstream?.close())

  it('passes a body of exactly 8 MiB and refuses one byte more with 413 before forwarding (default 0)', async () => {
    const {proxy} = await proxyFor(upstream.url)
    try {
      const exact = Buffer.alloc(8 * 1024 * 1024, 97)
      const ok = await send(proxy.url, {
        body: exact,
        headers: {'content-length': String(exact.length)},
      })
      assert.equal(ok.status, 200)
      assert.equal(ok.body, String(8 * 1024 * 1024))
      const seen = upstream.requests.length
      const big = Buffer.alloc(8 * 1024 * 1024 + 1, 97)
      const res = await send(proxy.url, {
        body: big,
        headers: {'content-length': String(big.length)},
      }).catch((e: Error) => e)
      if (!(res instanceof Error)) {
        assert.equal(res.status, 413)
        assert.match(JSON.parse(res.body).error, /exceeds 8388608 bytes/)
      }
      assert.equal(upstream.requests.length, seen, 'nothing reached the target')
    } finally {
      await proxy.close()
    }
  })

  it('honours --max-request-body-size for declared lengths', async () => {
    const {proxy} = await proxyFor(upstream.url, {maxRequestBodySize: 100})
    try {
      const seen = upstream.requests.length
      assert.equal((await send(proxy.url, {body: Buffer.alloc(100)})).status, 200)
      const res = await send(proxy.url, {body: Buffer.alloc(101)})
      assert.equal(res.status, 413)
      assert.equal(upstream.requests.length, seen + 1)
    } finally {
      await proxy.close()
    }
  })

  it('aborts a chunked body that crosses the limit and answers 413', async () => {
    const {proxy} = await proxyFor(upstream.url, {maxRequestBodySize: 100})
    try {
      const res = await send(proxy.url, {chunked: [Buffer.alloc(60), Buffer.alloc(60)]})
      assert.equal(res.status, 413)
      const last = upstream.requests.at(-1)
      // If the request reached the target it must not have completed with the oversized body.
      if (last && last.headers['transfer-encoding']) assert.ok(last.body.length <= 100)
    } finally {
      await proxy.close()
    }
  })
})

describe('outgoing credentials and header injection', () => {
  it('replaces the client Authorization with the configured bearer and injects headers over client values', async () => {
    const upstream = await startRecordingUpstream()
    const {proxy, logger} = await proxyFor(upstream.url, {
      upstreamToken: staticTokenSource('outgoing-secret-token'),
      forwardHeaders: parseForwardHeaders(['X-Tenant=acme', 'X-Api-Key=k=with=equals']),
    })
    try {
      await send(proxy.url, {
        headers: {
          authorization: 'Bearer client-token',
          'x-tenant': 'evil',
          'content-type': 'application/json',
        },
        body: '{}',
      })
      const rec = upstream.requests[0]!
      assert.equal(rec.headers.authorization, 'Bearer outgoing-secret-token')
      assert.equal(rec.headers['x-tenant'], 'acme')
      assert.equal(rec.headers['x-api-key'], 'k=with=equals')
      // Exactly one X-Tenant field reached the target.
      assert.equal(rec.rawHeaders.filter((h) => h.toLowerCase() === 'x-tenant').length, 1)
      const logs = logger.lines.join('\n')
      assert.doesNotMatch(logs, /outgoing-secret-token|client-token|k=with=equals/)
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })

  it('answers 503 with Retry-After when the upstream token source cannot give a token', async () => {
    const upstream = await startRecordingUpstream()
    const {proxy} = await proxyFor(upstream.url, {
      upstreamToken: {
        async getToken() {
          throw new Error('login pending')
        },
      },
    })
    try {
      const res = await send(proxy.url, {body: '{}'})
      assert.equal(res.status, 503)
      assert.ok(res.headers['retry-after'])
      assert.equal(upstream.requests.length, 0)
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })

  it('retries once with a fresh token when the target answers 401 and the source can refresh', async () => {
    const upstream = await startRecordingUpstream()
    upstream.respond((req, res) => {
      if (req.headers.authorization === 'Bearer fresh')
        res.end('ok:' + req.headers['content-length'])
      else {
        res.writeHead(401, {'www-authenticate': 'Bearer'})
        res.end()
      }
    })
    const {proxy} = await proxyFor(upstream.url, {
      upstreamToken: {
        getToken: async () => 'stale',
        onUnauthorized: async (rejected) => (rejected === 'stale' ? 'fresh' : undefined),
      },
    })
    try {
      const res = await send(proxy.url, {body: '{"jsonrpc":"2.0"}'})
      assert.equal(res.status, 200)
      assert.equal(res.body, 'ok:17')
      assert.equal(upstream.requests.length, 2)
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })
})

describe('upstream failures and aborts', () => {
  it('answers 502 JSON when the target refuses connections', async () => {
    const port = await freePort()
    const {proxy} = await proxyFor(`http://127.0.0.1:${port}`)
    try {
      const res = await send(proxy.url, {body: '{}'})
      assert.equal(res.status, 502)
      assert.deepEqual(JSON.parse(res.body), {error: 'upstream unavailable'})
    } finally {
      await proxy.close()
    }
  })

  it('cancels the upstream request when the client aborts mid-stream', async () => {
    const upstream = await startRecordingUpstream()
    let upstreamClosed!: () => void
    const closed = new Promise<void>((r) => (upstreamClosed = r))
    upstream.respond((_req, res) => {
      res.writeHead(200, {'content-type': 'text/event-stream'})
      res.write('data: first\n\n')
      res.once('close', () => upstreamClosed())
    })
    const {proxy} = await proxyFor(upstream.url)
    try {
      const ac = new AbortController()
      const res = await fetch(proxy.url + '/mcp', {
        signal: ac.signal,
        headers: {accept: 'text/event-stream'},
      })
      const reader = res.body!.getReader()
      const first = await reader.read()
      assert.match(Buffer.from(first.value!).toString(), /data: first/)
      ac.abort()
      await closed
      assert.equal(upstream.requests[0]!.aborted, true)
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })

  it('ends the client response when the target fails mid-stream', async () => {
    const upstream = await startRecordingUpstream()
    upstream.respond((_req, res) => {
      res.writeHead(200, {'content-type': 'text/event-stream'})
      res.write('data: one\n\n', () => setTimeout(() => res.destroy(), 50))
    })
    const {proxy} = await proxyFor(upstream.url)
    try {
      const res = await fetch(proxy.url + '/mcp')
      await assert.rejects(res.text())
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })
})

describe('request interceptor seam', () => {
  it('hands the whole body and principal to the interceptor and honours a local answer', async () => {
    const upstream = await startRecordingUpstream()
    const seen: string[] = []
    const {proxy} = await proxyFor(upstream.url, {
      interceptor: {
        async intercept(req) {
          seen.push(req.body.toString())
          if (req.body.toString().includes('deny')) {
            return {
              action: 'answer',
              answer: {
                status: 403,
                headers: {'content-type': 'application/json'},
                body: '{"denied":true}',
              },
            }
          }
          return {action: 'forward'}
        },
      },
    })
    try {
      const denied = await send(proxy.url, {body: '{"method":"deny"}'})
      assert.equal(denied.status, 403)
      assert.equal(denied.body, '{"denied":true}')
      assert.equal(upstream.requests.length, 0)
      const ok = await send(proxy.url, {body: '{"method":"allow"}'})
      assert.equal(ok.status, 200)
      assert.deepEqual(seen, ['{"method":"deny"}', '{"method":"allow"}'])
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })

  it('lets the interceptor call the target with the session headers and rewrite the response', async () => {
    const upstream = await startRecordingUpstream()
    upstream.respond((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const msg = JSON.parse(Buffer.concat(chunks).toString())
        if (msg.method === 'initialize') {
          res.writeHead(200, {'content-type': 'application/json', 'mcp-session-id': 's-1'})
          res.end('{}')
        } else if (msg.method === 'tools/list') {
          res.writeHead(200, {'content-type': 'text/event-stream'})
          res.end(
            `event: message\ndata: ${JSON.stringify({jsonrpc: '2.0', id: msg.id, result: {tools: [], session: req.headers['mcp-session-id']}})}\n\n`,
          )
        } else {
          res.writeHead(200, {'content-type': 'application/json', 'content-length': '13'})
          res.end('{"upper":"no"}'.slice(0, 13))
        }
      })
    })
    const {proxy} = await proxyFor(upstream.url, {
      interceptor: {
        async intercept(req, callUpstream) {
          if (req.headers['mcp-session-id'] === undefined) return {action: 'forward'}
          const list = (await callUpstream({jsonrpc: '2.0', id: 7, method: 'tools/list'})) as {
            result: {session: string}
          }
          assert.equal(list.result.session, 's-1')
          return {
            action: 'forward',
            rewriteResponse: () =>
              new TransformStream<Uint8Array, Uint8Array>({
                transform(chunk, ctl) {
                  ctl.enqueue(
                    new TextEncoder().encode(new TextDecoder().decode(chunk).toUpperCase()),
                  )
                },
              }),
          }
        },
      },
    })
    try {
      await send(proxy.url, {body: '{"jsonrpc":"2.0","id":0,"method":"initialize"}'})
      const res = await send(proxy.url, {
        headers: {'mcp-session-id': 's-1'},
        body: '{"jsonrpc":"2.0","id":1,"method":"tools/call"}',
      })
      assert.equal(res.status, 200)
      assert.equal(res.body, '{"UPPER":"NO"')
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })
})
