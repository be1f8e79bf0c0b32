import assert from 'node:assert/strict'
import {mkdtemp, rm} from 'node:fs/promises'
import {
  createServer,
  request,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {Agent} from 'undici'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import type {UpstreamDispatcher} from '../../../src/lib/proxy/forward.ts'
import {callJsonRpc} from '../../../src/lib/proxy/mcp-call.ts'
import {startProxy, type RunningProxy} from '../../../src/lib/proxy/proxy-server.ts'
import {socketDispatcher} from '../../../src/lib/proxy/socket-dispatcher.ts'
import {DEFAULT_TIMEOUTS} from '../../../src/lib/proxy/upstream.ts'
import {loopbackProxyConfig} from '../../helpers/proxy-config.ts'

/**
 * The node:http hop to a private socket (`run`'s stdio bridge) keeps every property of the undici
 * path toward public targets: streaming, backpressure both ways, abort on client departure, a cut
 * stream when the target dies, the head timeout, and the interceptor's own bounded calls.
 */

type Handler = (req: IncomingMessage, res: ServerResponse) => void

const MB = 1024 * 1024

describe('proxy → private socket over node:http', () => {
  let dir: string
  let socket: string
  let server: Server
  let handle: Handler = () => {}
  let connections = 0
  const proxies: RunningProxy[] = []

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tg-sockd-'))
    socket = join(dir, 'bridge.sock')
    server = createServer((req, res) => handle(req, res))
    server.on('connection', () => connections++)
    await new Promise<void>((resolve) => server.listen(socket, () => resolve()))
  })
  after(async () => {
    await Promise.all(proxies.map((p) => p.close()))
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
    await rm(dir, {recursive: true, force: true})
  })

  async function proxy(timeouts = DEFAULT_TIMEOUTS): Promise<RunningProxy> {
    const p = await startProxy(
      loopbackProxyConfig('http://bridge.local', {targetSocketPath: socket, timeouts}),
      {logger: createMemoryLogger()},
    )
    proxies.push(p)
    return p
  }

  it('reuses one upstream connection for sequential calls', async () => {
    handle = (req, res) => {
      req.resume()
      req.on('end', () => res.end('{}'))
    }
    const p = await proxy()
    const before = connections
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${p.url}/mcp`, {method: 'POST', body: '{}'})
      assert.equal(res.status, 200)
      await res.text()
    }
    assert.equal(connections - before, 1)
  })

  it('streams an event stream: the first event arrives while the target holds the stream open', async () => {
    let finish: () => void = () => {}
    handle = (_req, res) => {
      res.writeHead(200, {'content-type': 'text/event-stream'})
      res.write('data: {"n":1}\n\n')
      finish = () => res.end('data: {"n":2}\n\n')
    }
    const p = await proxy()
    const res = await fetch(`${p.url}/mcp`)
    assert.equal(res.headers.get('content-type'), 'text/event-stream')
    const reader = res.body!.getReader()
    const first = await reader.read()
    assert.equal(Buffer.from(first.value!).toString(), 'data: {"n":1}\n\n')
    finish()
    let rest = ''
    for (let r = await reader.read(); !r.done; r = await reader.read())
      rest += Buffer.from(r.value).toString()
    assert.equal(rest, 'data: {"n":2}\n\n')
  })

  it('holds the target back while the client does not read (backpressure), and loses no byte', async () => {
    const total = 64 * MB
    const chunk = Buffer.alloc(64 * 1024, 7)
    let written = 0
    let blocked = false
    handle = (_req, res) => {
      res.writeHead(200, {'content-type': 'application/octet-stream'})
      const pump = () => {
        while (written < total) {
          written += chunk.length
          if (!res.write(chunk)) {
            blocked = true
            res.once('drain', pump)
            return
          }
        }
        res.end()
      }
      pump()
    }
    const p = await proxy()
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const url = new URL(`${p.url}/big`)
      request({host: url.hostname, port: url.port, path: url.pathname}, resolve)
        .on('error', reject)
        .end()
    })
    res.pause()
    await new Promise((r) => setTimeout(r, 1000))
    assert.ok(blocked, 'the target never had to wait')
    assert.ok(written < 16 * MB, `${written} bytes left the target with the client not reading`)
    let received = 0
    res.on('data', (c: Buffer) => (received += c.length))
    res.resume()
    await new Promise((r) => res.on('end', r))
    assert.equal(received, total)
  })

  it('streams a large request body to the target intact', async () => {
    let got = 0
    handle = (req, res) => {
      req.on('data', (c: Buffer) => (got += c.length))
      req.on('end', () => res.end(JSON.stringify({got})))
    }
    const p = await proxy()
    const body = Buffer.alloc(5 * MB, 1)
    const res = await fetch(`${p.url}/upload`, {method: 'POST', body})
    assert.equal(res.status, 200)
    assert.deepEqual(await res.json(), {got: body.length})
  })

  it('cancels the upstream request when the client leaves mid-stream', async () => {
    let upstreamClosed: () => void = () => {}
    const closed = new Promise<void>((r) => (upstreamClosed = r))
    handle = (_req, res) => {
      res.writeHead(200, {'content-type': 'text/event-stream'})
      res.write(': open\n\n')
      res.on('close', () => upstreamClosed())
    }
    const p = await proxy()
    const controller = new AbortController()
    const res = await fetch(`${p.url}/mcp`, {signal: controller.signal})
    await res.body!.getReader().read()
    controller.abort()
    await closed // times out (test timeout) if the proxy kept the upstream stream open
  })

  it('cuts the client response when the target dies mid-stream', async () => {
    handle = (_req, res) => {
      res.writeHead(200, {'content-type': 'application/json', 'content-length': '1000'})
      res.write('{"partial":')
      setTimeout(() => res.socket?.destroy(), 50)
    }
    const p = await proxy()
    const res = await fetch(`${p.url}/mcp`, {method: 'POST', body: '{}'})
    assert.equal(res.status, 200)
    await assert.rejects(res.text())
  })

  for (const method of ['GET', 'DELETE', 'OPTIONS']) {
    it(`frames a chunked ${method} body: what it holds reaches the target as a body, never as a second request`, async () => {
      const requests: Array<{method: string; url: string; body: string}> = []
      handle = (req, res) => {
        let body = ''
        req.on('data', (c: Buffer) => (body += c.toString('latin1')))
        req.on('end', () => {
          requests.push({method: req.method ?? '', url: req.url ?? '', body})
          res.end('{}')
        })
      }
      const p = await proxy()
      const inner = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"smuggled"}}'
      const smuggled =
        `POST /smuggled HTTP/1.1\r\nHost: bridge.local\r\ncontent-type: application/json\r\n` +
        `content-length: ${inner.length}\r\n\r\n${inner}`
      const url = new URL(`${p.url}/mcp`)
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(
          {
            host: url.hostname,
            port: url.port,
            path: url.pathname,
            method,
            headers: {'transfer-encoding': 'chunked'},
          },
          (res) => {
            res.resume()
            res.on('end', () => resolve(res.statusCode ?? 0))
          },
        )
        req.on('error', reject)
        req.end(smuggled)
      })
      // One more call on the same upstream socket: a smuggled request would have shifted it.
      const after = await fetch(`${p.url}/mcp`, {method: 'POST', body: '{"after":1}'})
      await after.text()
      assert.equal(status, 200)
      assert.deepEqual(
        requests.map((r) => r.url),
        ['/mcp', '/mcp'],
      )
      assert.deepEqual(requests[0], {method, url: '/mcp', body: smuggled})
    })
  }

  it('answers 502 when the target sends no head in time', async () => {
    handle = (req) => req.resume() // never answers
    const p = await proxy({...DEFAULT_TIMEOUTS, headersMs: 300})
    const res = await fetch(`${p.url}/mcp`, {method: 'POST', body: '{}'})
    assert.equal(res.status, 502)
    assert.deepEqual(await res.json(), {error: 'upstream request failed'})
  })

  it('drops hop-by-hop response fields and the ones Connection names', async () => {
    handle = (_req, res) => {
      res.setHeader('connection', 'keep-alive, x-private')
      res.setHeader('x-private', 'hop')
      res.setHeader('x-kept', 'end-to-end')
      res.end('{}')
    }
    const p = await proxy()
    const res = await fetch(`${p.url}/mcp`)
    assert.equal(res.headers.get('x-kept'), 'end-to-end')
    assert.equal(res.headers.get('x-private'), null)
    await res.text()
  })
})

/** The interceptor's own call (authz asking tools/list) on both dispatchers. */
describe('callJsonRpc', () => {
  let dir: string
  let server: Server
  let tcp: Server
  let handle: Handler = () => {}
  let port = 0
  const dispatchers: Record<string, () => UpstreamDispatcher> = {}

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tg-rpc-'))
    server = createServer((req, res) => handle(req, res))
    await new Promise<void>((resolve) => server.listen(join(dir, 's.sock'), () => resolve()))
    tcp = createServer((req, res) => handle(req, res))
    await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', () => resolve()))
    port = (tcp.address() as {port: number}).port
    dispatchers['node:http on a socket'] = () =>
      socketDispatcher(join(dir, 's.sock'), DEFAULT_TIMEOUTS)
    dispatchers['undici over TCP'] = () => new Agent()
  })
  after(async () => {
    for (const s of [server, tcp]) {
      s.closeAllConnections()
      await new Promise<void>((resolve) => s.close(() => resolve()))
    }
    await rm(dir, {recursive: true, force: true})
  })

  const call = (name: string, signal?: AbortSignal) => {
    const dispatcher = dispatchers[name]!()
    return callJsonRpc({
      dispatcher,
      origin: name.includes('TCP') ? `http://127.0.0.1:${port}` : 'http://bridge.local',
      path: '/mcp',
      headers: {},
      body: {jsonrpc: '2.0', id: 7, method: 'tools/list'},
      ...(signal ? {signal} : {}),
    }).finally(() => dispatcher.close())
  }

  it('node:http on a socket: nothing leaves once the dispatcher is closed', async () => {
    let seen = 0
    handle = (req, res) => {
      seen++
      req.resume()
      res.end('{}')
    }
    const dispatcher = socketDispatcher(join(dir, 's.sock'), DEFAULT_TIMEOUTS)
    await dispatcher.close()
    await assert.rejects(
      callJsonRpc({
        dispatcher,
        origin: 'http://bridge.local',
        path: '/mcp',
        headers: {},
        body: {jsonrpc: '2.0', id: 1, method: 'ping'},
      }),
      /the upstream client is closed/,
    )
    assert.equal(seen, 0)
  })

  for (const name of ['node:http on a socket', 'undici over TCP']) {
    it(`${name}: a JSON answer`, async () => {
      handle = (req, res) => {
        assert.equal(req.headers['accept-encoding'], 'identity')
        req.resume()
        res.setHeader('content-type', 'application/json')
        res.end('{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}')
      }
      assert.deepEqual(await call(name), {jsonrpc: '2.0', id: 7, result: {tools: []}})
    })

    it(`${name}: the matching response out of an event stream`, async () => {
      handle = (req, res) => {
        req.resume()
        res.setHeader('content-type', 'text/event-stream')
        res.write('data: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n')
        res.end('data: {"jsonrpc":"2.0","id":7,"result":{"ok":true}}\n\n')
      }
      assert.deepEqual(await call(name), {jsonrpc: '2.0', id: 7, result: {ok: true}})
    })

    it(`${name}: an answer over 8 MiB is refused, not buffered`, async () => {
      let sent = 0
      handle = (req, res) => {
        req.resume()
        res.setHeader('content-type', 'application/json')
        const chunk = Buffer.alloc(MB, 32)
        const pump = () => {
          while (sent < 64 * MB) {
            sent += chunk.length
            if (!res.write(chunk)) return void res.once('drain', pump)
          }
          res.end()
        }
        res.on('error', () => {})
        pump()
      }
      // A signal that never fires: only the bound itself can end this call.
      await assert.rejects(call(name, new AbortController().signal), /upstream answer too large/)
      assert.ok(sent < 64 * MB, 'the target was read to its end')
    })

    it(`${name}: an HTTP error status is an error`, async () => {
      handle = (req, res) => {
        req.resume()
        res.statusCode = 500
        res.end('{}')
      }
      await assert.rejects(call(name), /upstream answered HTTP 500/)
    })

    it(`${name}: gives up at the signal`, async () => {
      handle = (req) => req.resume() // never answers
      await assert.rejects(call(name, AbortSignal.timeout(200)), /TimeoutError|aborted|timeout/i)
    })
  }
})
