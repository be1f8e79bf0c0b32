/**
 * A gateway session (issue 37) against a hostile or broken backend: a real HTTP server in this
 * process that speaks just enough streamable HTTP to be connected to, then misbehaves on purpose.
 * It is the attacker here, not the thing under test: GatewaySession and BackendLink are real.
 */
import assert from 'node:assert/strict'
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import {setTimeout as sleep} from 'node:timers/promises'
import {after, before, describe, it} from 'node:test'
import {isLinkFailure} from '../../../src/lib/gateway/backend-link.ts'
import {openBackendTarget, type BackendTarget} from '../../../src/lib/gateway/backend-target.ts'
import {parseBackendFlag, validateGatewayConfig} from '../../../src/lib/gateway/config.ts'
import {GatewaySession} from '../../../src/lib/gateway/gateway-session.ts'
import {BackendHealth} from '../../../src/lib/gateway/health.ts'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'

type Msg = Record<string, unknown>

interface Behaviour {
  initializeDelayMs: number
  /** Status of the standalone GET stream (200 keeps it open). */
  getStatus: number
  /** Answer to ping: the backend's own error, with the codes the gateway uses itself. */
  pingError: boolean
  /** tools/call: 'answer', 'http500', or 'trickle' (headers, then a byte now and then, forever). */
  call: 'answer' | 'http500' | 'trickle'
  /** Every request but initialize, and the stream, answer 404: each session is forgotten at once. */
  forget: boolean
}

class HostileBackend {
  readonly server: Server
  url = ''
  behaviour: Behaviour = {
    initializeDelayMs: 0,
    getStatus: 200,
    pingError: false,
    call: 'answer',
    forget: false,
  }
  initializes = 0
  deletes = 0
  /** Initialize requests the client gave up on before the answer. */
  abortedInitializes = 0
  openStreams = 0
  openCalls = 0
  readonly #held = new Set<ServerResponse>()

  constructor() {
    this.server = createServer((req, res) => void this.#handle(req, res))
  }

  async start(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()))
    this.url = `http://127.0.0.1:${(this.server.address() as {port: number}).port}/mcp`
  }

  async close(): Promise<void> {
    for (const res of this.#held) res.destroy()
    this.server.closeAllConnections()
    await new Promise((r) => this.server.close(r))
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method === 'DELETE') {
      this.deletes++
      return void res.writeHead(200).end()
    }
    if (req.method === 'GET') {
      if (this.behaviour.forget) return void res.writeHead(404).end('no such session')
      if (this.behaviour.getStatus !== 200)
        return void res.writeHead(this.behaviour.getStatus).end('no')
      this.openStreams++
      this.#held.add(res)
      res.on('close', () => {
        this.openStreams--
        this.#held.delete(res)
      })
      return void res.writeHead(200, {'content-type': 'text/event-stream'}).write(': open\n\n')
    }
    let body = ''
    for await (const chunk of req) body += String(chunk)
    const m = JSON.parse(body) as Msg
    const json = (value: unknown): void => {
      res
        .writeHead(200, {'content-type': 'application/json', 'mcp-session-id': 's1'})
        .end(JSON.stringify(value))
    }
    if (m.method === 'initialize') {
      this.initializes++
      res.on('close', () => res.writableFinished || this.abortedInitializes++)
      await sleep(this.behaviour.initializeDelayMs)
      if (res.destroyed) return
      return json({
        jsonrpc: '2.0',
        id: m.id,
        result: {
          protocolVersion: '2025-06-18',
          capabilities: {tools: {listChanged: true}},
          serverInfo: {name: 'hostile', version: '1'},
        },
      })
    }
    if (!('id' in m)) return void res.writeHead(202).end()
    if (this.behaviour.forget) return void res.writeHead(404).end('no such session')
    if (m.method === 'ping' && this.behaviour.pingError)
      return json({jsonrpc: '2.0', id: m.id, error: {code: -32002, message: 'forged: unavailable'}})
    if (m.method === 'tools/call' && this.behaviour.call !== 'answer') {
      if (this.behaviour.call === 'http500')
        return void res.writeHead(500).end('internal detail: db password hunter2')
      this.openCalls++
      this.#held.add(res)
      res.on('close', () => {
        this.openCalls--
        this.#held.delete(res)
      })
      res.writeHead(200, {'content-type': 'text/event-stream'})
      const drip = setInterval(() => res.write(': still here\n'), 50)
      res.on('close', () => clearInterval(drip))
      return
    }
    return json({jsonrpc: '2.0', id: m.id, result: m.method === 'tools/list' ? {tools: []} : {}})
  }
}

describe('gateway session against a hostile backend', () => {
  const backend = new HostileBackend()
  let target: BackendTarget
  const logger = createMemoryLogger('debug')
  const config = () =>
    validateGatewayConfig({}, [parseBackendFlag(`${backend.url}=evil`)], {
      baseDir: '/',
      where: 'test',
    }).backends[0]!

  before(async () => {
    await backend.start()
    target = await openBackendTarget(config(), {logger})
  })
  after(async () => {
    // Every session closed: nothing of ours may still hold a request open to the backend.
    const t0 = Date.now()
    await target.close()
    assert.ok(Date.now() - t0 < 2_000, 'the agent closed at once')
    await backend.close()
  })

  function session(opts: {requestTimeoutMs?: number} = {}) {
    const delivered: Array<{message: Msg; related: unknown}> = []
    const health = new BackendHealth(config(), target, {logger, intervalMs: 200})
    const s = new GatewaySession(
      `s-${Math.random()}`,
      {deliver: (message, related) => delivered.push({message, related}), end: () => undefined},
      {
        backends: [{config: config(), target, health}],
        pageSize: 100,
        logger,
        requestTimeoutMs: opts.requestTimeoutMs ?? 2_000,
        connectTimeoutMs: 2_000,
        serverInfo: {name: 'gw', version: '1'},
      },
    )
    const answer = async (id: number) => {
      for (let i = 0; i < 100; i++) {
        const hit = delivered.find((d) => d.message.id === id && !('method' in d.message))
        if (hit) return hit.message
        await sleep(20)
      }
      throw new Error(`no answer to ${id}`)
    }
    const init = async () => {
      s.fromClient({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: {protocolVersion: '2025-06-18'},
      })
      await answer(0)
      s.fromClient({jsonrpc: '2.0', method: 'notifications/initialized'})
    }
    return {s, delivered, answer, init, health}
  }

  it('a backend cannot forge the link’s own failures', () => {
    assert.equal(isLinkFailure({jsonrpc: '2.0', id: 1, error: {code: -32002, message: 'x'}}), false)
  })

  it('a session closed while its backend is still answering initialize leaves no backend session', async () => {
    backend.behaviour = {...backend.behaviour, initializeDelayMs: 300}
    const {s} = session()
    const aborted = backend.abortedInitializes
    s.fromClient({jsonrpc: '2.0', id: 0, method: 'initialize', params: {}})
    await sleep(100)
    await s.close()
    await sleep(700)
    assert.equal(backend.openStreams, 0, 'no standalone stream left open')
    // The initialize was let go before the backend answered: it never gave out a session.
    assert.equal(backend.abortedInitializes, aborted + 1)
    assert.deepEqual(s.connected, [])
    backend.behaviour = {...backend.behaviour, initializeDelayMs: 0}
  })

  it('refuses a second request with an id in flight, and a second initialize', async () => {
    backend.behaviour = {...backend.behaviour, call: 'trickle'}
    const {s, answer, init, delivered} = session()
    await init()
    s.fromClient({jsonrpc: '2.0', id: 7, method: 'tools/call', params: {name: 'evil__x'}})
    s.fromClient({jsonrpc: '2.0', id: 7, method: 'tools/call', params: {name: 'evil__y'}})
    assert.deepEqual((await answer(7)).error, {code: -32600, message: 'id already in use'})
    s.fromClient({jsonrpc: '2.0', id: 8, method: 'initialize', params: {}})
    assert.match(JSON.stringify((await answer(8)).error), /already initialized/)
    assert.equal(delivered.filter((d) => d.message.id === 7).length, 1)
    await s.close()
    backend.behaviour = {...backend.behaviour, call: 'answer'}
  })

  it('a request that times out or is cancelled ends its HTTP exchange with the backend', async () => {
    backend.behaviour = {...backend.behaviour, call: 'trickle'}
    const {s, answer, init} = session({requestTimeoutMs: 300})
    await init()
    for (let id = 1; id <= 5; id++)
      s.fromClient({jsonrpc: '2.0', id, method: 'tools/call', params: {name: 'evil__slow'}})
    s.fromClient({jsonrpc: '2.0', id: 6, method: 'tools/call', params: {name: 'evil__slow'}})
    await sleep(50)
    s.fromClient({jsonrpc: '2.0', method: 'notifications/cancelled', params: {requestId: 6}})
    for (let id = 1; id <= 5; id++) assert.equal((await answer(id)).error && true, true)
    await sleep(200)
    assert.equal(backend.openCalls, 0, 'every held call was let go')
    await s.close()
    backend.behaviour = {...backend.behaviour, call: 'answer'}
  })

  it('one refused call fails alone: the link and the other calls go on', async () => {
    backend.behaviour = {...backend.behaviour, call: 'http500'}
    const {s, answer, init} = session()
    await init()
    const initializes = backend.initializes
    s.fromClient({jsonrpc: '2.0', id: 1, method: 'tools/call', params: {name: 'evil__boom'}})
    const failed = await answer(1)
    assert.match((failed.error as {message: string}).message, /backend "evil" answered HTTP 500/)
    assert.doesNotMatch(
      JSON.stringify(failed),
      /hunter2/,
      'the backend’s error body stays out of the answer',
    )
    backend.behaviour = {...backend.behaviour, call: 'answer'}
    s.fromClient({jsonrpc: '2.0', id: 2, method: 'tools/call', params: {name: 'evil__ok'}})
    assert.deepEqual((await answer(2)).result, {})
    assert.equal(backend.initializes, initializes, 'no reconnect')
    await s.close()
  })

  it('a backend that fails its stream and forges ping errors causes no reconnect storm', async () => {
    backend.behaviour = {...backend.behaviour, getStatus: 500, pingError: true}
    const {s, init, delivered} = session()
    const before = backend.initializes
    await init()
    await sleep(2_000)
    assert.ok(
      backend.initializes - before <= 2,
      `${backend.initializes - before} initializes in 2 s`,
    )
    const changed = delivered.filter((d) => String(d.message.method).endsWith('list_changed'))
    assert.ok(changed.length <= 3, `${changed.length} list_changed in 2 s`)
    await s.close()
    backend.behaviour = {...backend.behaviour, getStatus: 200, pingError: false}
  })

  it('a backend that forgets every session at once is retried with growing pauses', async () => {
    const {s, init} = session()
    await init()
    const before = backend.initializes
    backend.behaviour = {...backend.behaviour, forget: true}
    s.fromClient({jsonrpc: '2.0', id: 1, method: 'tools/call', params: {name: 'evil__x'}})
    await sleep(4_000)
    // Without pauses: a probe (every 200 ms here) and a reconnect per cycle, ~40 in 4 s.
    const made = backend.initializes - before
    assert.ok(made <= 10, `${made} initializes in 4 s`)
    backend.behaviour = {...backend.behaviour, forget: false}
    await s.close()
  })

  it('a session that ends while its backend is down stops waiting for it', async () => {
    const down = new BackendHealth(config(), target, {logger, intervalMs: 100})
    const ended = new AbortController()
    const waiting = down.whenUp(ended.signal)
    ended.abort()
    assert.equal(await waiting, false)
  })
})
