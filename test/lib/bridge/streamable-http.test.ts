import assert from 'node:assert/strict'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {after, before, describe, it} from 'node:test'
import {Multiplexer, type Message} from '../../../src/lib/bridge/multiplexer.ts'
import {SESSION_IDLE_MS, StreamableHttpEndpoint} from '../../../src/lib/bridge/streamable-http.ts'
import {createLogger} from '../../../src/lib/log/logger.ts'

/**
 * The bridge's streamable-HTTP endpoint on a real node:http server, with a "server" that answers
 * every request at once (the multiplexer's send): session rules, errors a hostile or sloppy client
 * gets, and the expiry of sessions abandoned without DELETE.
 */
describe('bridge streamable HTTP endpoint', () => {
  let server: Server
  let url: string
  let endpoint: StreamableHttpEndpoint
  before(async () => {
    const mux: Multiplexer = new Multiplexer({
      logger: createLogger({level: 'error', write: () => undefined}),
      requestTimeoutMs: 5_000,
      send: (m: Message) => {
        if ('id' in m && typeof m.method === 'string')
          setImmediate(() => mux.fromServer({jsonrpc: '2.0', id: m.id, result: {method: m.method}}))
      },
    })
    endpoint = new StreamableHttpEndpoint(mux, {maxBodyBytes: 1024, maxSessions: 4})
    server = createServer((req, res) => void endpoint.handle(req, res))
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`
  })
  after(async () => {
    endpoint.closeAll()
    server.closeAllConnections()
    await new Promise((r) => server.close(r))
  })

  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(url, {
      method: 'POST',
      headers: {'content-type': 'application/json', accept: 'application/json', ...headers},
      body,
    })
  const init = async () => {
    const res = await post('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}')
    assert.equal(res.status, 200)
    assert.deepEqual(await res.json(), {jsonrpc: '2.0', id: 1, result: {method: 'initialize'}})
    return res.headers.get('mcp-session-id')!
  }

  it('creates a session on initialize and answers requests in it as JSON', async () => {
    const sid = await init()
    const res = await post('{"jsonrpc":"2.0","id":"a","method":"tools/list"}', {
      'mcp-session-id': sid,
    })
    assert.deepEqual(await res.json(), {jsonrpc: '2.0', id: 'a', result: {method: 'tools/list'}})
    const note = await post('{"jsonrpc":"2.0","method":"notifications/initialized"}', {
      'mcp-session-id': sid,
    })
    assert.equal(note.status, 202)
  })

  it('refuses what a sloppy or hostile client sends, with the right status', async () => {
    const sid = await init()
    const cases: Array<[string, Record<string, string>, number]> = [
      ['{"jsonrpc":"2.0","id":2,"method":"ping"}', {}, 400], // no session
      ['{"jsonrpc":"2.0","id":2,"method":"ping"}', {'mcp-session-id': 'nope'}, 404],
      ['not json', {'mcp-session-id': sid}, 400],
      ['{"id":2}', {'mcp-session-id': sid}, 400],
      ['[]', {'mcp-session-id': sid}, 400],
      [
        '{"jsonrpc":"2.0","id":2,"method":"ping"}',
        {'mcp-session-id': sid, 'content-type': 'text/plain'},
        415,
      ],
      [
        `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"${'y'.repeat(2000)}"}}`,
        {'mcp-session-id': sid},
        413,
      ],
      ['{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}', {'mcp-session-id': sid}, 400],
    ]
    for (const [body, headers, status] of cases) {
      const res = await post(body, headers)
      assert.equal(res.status, status, `${body.slice(0, 40)} ${JSON.stringify(headers)}`)
      await res.body?.cancel()
    }
    const get = await fetch(url, {headers: {accept: 'text/event-stream', 'mcp-session-id': sid}})
    assert.equal(get.status, 200)
    const second = await fetch(url, {headers: {accept: 'text/event-stream', 'mcp-session-id': sid}})
    assert.equal(second.status, 409, 'one standalone stream per session')
    await get.body?.cancel()
  })

  it('ends sessions abandoned without DELETE, so they never fill the session limit', async () => {
    // Fill the session limit (4) with sessions that are then simply abandoned.
    const sids: string[] = []
    for (let i = 0; i < 5; i++) {
      const res = await post('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}')
      await res.body?.cancel()
      if (res.status === 503) break
      sids.push(res.headers.get('mcp-session-id')!)
    }
    const full = await post('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}')
    assert.equal(full.status, 503)
    await full.body?.cancel()
    assert.ok(endpoint.expireIdle(Date.now() + SESSION_IDLE_MS + 1) >= sids.length)
    const gone = await post('{"jsonrpc":"2.0","id":3,"method":"ping"}', {
      'mcp-session-id': sids[0]!,
    })
    assert.equal(gone.status, 404)
    await gone.body?.cancel()
    await init()
  })
})
