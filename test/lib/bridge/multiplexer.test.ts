import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {setTimeout as sleep} from 'node:timers/promises'
import {createLogger} from '../../../src/lib/log/logger.ts'
import {
  Multiplexer,
  REQUEST_TIMEOUT,
  SERVER_UNAVAILABLE,
  type Message,
} from '../../../src/lib/bridge/multiplexer.ts'

/**
 * The session multiplexer of `run`'s stdio bridge, driven directly: the "server" is the list of
 * messages the multiplexer writes to stdin, the "clients" record what they are delivered. The
 * end-to-end behaviour with a real server and real SDK clients is in test/commands/run*.test.ts.
 */
function setup(requestTimeoutMs = 60_000) {
  const toServer: Message[] = []
  const mux = new Multiplexer({
    send: (m) => void toServer.push(m),
    requestTimeoutMs,
    logger: createLogger({level: 'error', write: () => undefined}),
  })
  const client = (id: string) => {
    const got: Array<{message: Message; related: unknown}> = []
    const ended: string[] = []
    mux.open(id, {
      deliver: (message, related) => got.push({message, related}),
      end: (r) => ended.push(r),
    })
    return {got, ended, send: (m: Message) => mux.fromClient(id, {jsonrpc: '2.0', ...m})}
  }
  return {mux, toServer, client}
}

const last = <T>(list: T[]): T => list[list.length - 1]!

describe('bridge multiplexer', () => {
  it('gives colliding client ids distinct server ids and restores each on the way back', () => {
    const {mux, toServer, client} = setup()
    const a = client('a')
    const b = client('b')
    a.send({id: 1, method: 'tools/call', params: {name: 'echo'}})
    b.send({id: 1, method: 'tools/call', params: {name: 'echo'}})
    const [ida, idb] = toServer.map((m) => m.id)
    assert.notEqual(ida, idb)
    mux.fromServer({jsonrpc: '2.0', id: idb, result: {who: 'b'}})
    mux.fromServer({jsonrpc: '2.0', id: ida, result: {who: 'a'}})
    assert.deepEqual(a.got, [{message: {jsonrpc: '2.0', id: 1, result: {who: 'a'}}, related: 1}])
    assert.deepEqual(b.got, [{message: {jsonrpc: '2.0', id: 1, result: {who: 'b'}}, related: 1}])
  })

  it('sends the first initialize to the server and answers later ones from its result', () => {
    const {mux, toServer, client} = setup()
    const a = client('a')
    const b = client('b')
    a.send({id: 0, method: 'initialize', params: {protocolVersion: '2025-06-18'}})
    b.send({id: 'x', method: 'initialize', params: {protocolVersion: '2025-06-18'}})
    assert.equal(toServer.length, 1, 'only one initialize reaches the server')
    mux.fromServer({jsonrpc: '2.0', id: toServer[0]!.id, result: {serverInfo: {name: 's'}}})
    assert.deepEqual(last(a.got).message, {
      jsonrpc: '2.0',
      id: 0,
      result: {serverInfo: {name: 's'}},
    })
    assert.deepEqual(last(b.got).message, {
      jsonrpc: '2.0',
      id: 'x',
      result: {serverInfo: {name: 's'}},
    })
    a.send({method: 'notifications/initialized'})
    b.send({method: 'notifications/initialized'})
    const c = client('c')
    c.send({id: 5, method: 'initialize', params: {}})
    assert.deepEqual(last(c.got).message, {
      jsonrpc: '2.0',
      id: 5,
      result: {serverInfo: {name: 's'}},
    })
    assert.equal(toServer.filter((m) => m.method === 'notifications/initialized').length, 1)
    assert.equal(toServer.filter((m) => m.method === 'initialize').length, 1)
  })

  it('rewrites progress tokens per request and routes progress to the right client', () => {
    const {mux, toServer, client} = setup()
    const a = client('a')
    const b = client('b')
    a.send({id: 1, method: 'tools/call', params: {name: 'slow', _meta: {progressToken: 7}}})
    b.send({id: 1, method: 'tools/call', params: {name: 'slow', _meta: {progressToken: 7}}})
    const tokA = (toServer[0]!.params as {_meta: {progressToken: unknown}})._meta.progressToken
    const tokB = (toServer[1]!.params as {_meta: {progressToken: unknown}})._meta.progressToken
    assert.notEqual(tokA, tokB)
    mux.fromServer({
      jsonrpc: '2.0',
      method: 'notifications/progress',
      params: {progressToken: tokB, progress: 1},
    })
    assert.equal(a.got.length, 0)
    assert.deepEqual(b.got[0], {
      message: {
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: {progressToken: 7, progress: 1},
      },
      related: 1,
    })
  })

  it('routes a server request to the client whose call caused it, and only that client may answer', () => {
    const {mux, toServer, client} = setup()
    const a = client('a')
    const b = client('b')
    a.send({id: 1, method: 'tools/list'})
    b.send({id: 9, method: 'tools/call', params: {name: 'sampleLLM'}})
    mux.fromServer({jsonrpc: '2.0', id: 0, method: 'sampling/createMessage', params: {}})
    assert.equal(a.got.length, 0)
    assert.deepEqual(b.got[0], {
      message: {jsonrpc: '2.0', id: 0, method: 'sampling/createMessage', params: {}},
      related: 9,
    })
    const before = toServer.length
    a.send({id: 0, result: {content: 'forged'}})
    assert.equal(toServer.length, before, "another session's answer is dropped")
    b.send({id: 0, result: {content: 'real'}})
    assert.deepEqual(last(toServer), {jsonrpc: '2.0', id: 0, result: {content: 'real'}})
  })

  it('answers a request the server leaves unanswered with a timeout error and cancels it there', async () => {
    const {mux, toServer, client} = setup(50)
    const a = client('a')
    a.send({id: 3, method: 'tools/call', params: {name: 'hang'}})
    const serverId = toServer[0]!.id
    await sleep(120)
    assert.equal((a.got[0]!.message.error as {code: number}).code, REQUEST_TIMEOUT)
    assert.deepEqual(last(toServer), {
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: {requestId: serverId, reason: 'request timed out'},
    })
    mux.fromServer({jsonrpc: '2.0', id: serverId, result: {}})
    assert.equal(a.got.length, 1, 'a late answer is not delivered twice')
  })

  it('a client that goes away cancels its requests and its pending server requests get an error', () => {
    const {mux, toServer, client} = setup()
    const a = client('a')
    client('b')
    a.send({id: 1, method: 'tools/call', params: {name: 'slow'}})
    const serverId = toServer[0]!.id
    mux.fromServer({jsonrpc: '2.0', id: 'srv-1', method: 'elicitation/create', params: {}})
    mux.close('a')
    assert.deepEqual(toServer.slice(1), [
      {
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: {requestId: serverId, reason: 'client disconnected'},
      },
      {
        jsonrpc: '2.0',
        id: 'srv-1',
        error: {code: SERVER_UNAVAILABLE, message: 'client disconnected'},
      },
    ])
  })

  it('a client cancels only its own requests', () => {
    const {toServer, client} = setup()
    const a = client('a')
    const b = client('b')
    a.send({id: 1, method: 'tools/call', params: {name: 'slow'}})
    b.send({method: 'notifications/cancelled', params: {requestId: 1}})
    assert.equal(toServer.length, 1, "b cannot cancel a's request 1")
    a.send({method: 'notifications/cancelled', params: {requestId: 1, reason: 'user'}})
    assert.deepEqual(last(toServer).params, {requestId: toServer[0]!.id, reason: 'user'})
  })

  it('resource updates reach only subscribed sessions; list changes reach all', () => {
    const {mux, toServer, client} = setup()
    const a = client('a')
    const b = client('b')
    a.send({id: 1, method: 'resources/subscribe', params: {uri: 'demo://1'}})
    mux.fromServer({jsonrpc: '2.0', id: toServer[0]!.id, result: {}})
    const updated = {
      jsonrpc: '2.0',
      method: 'notifications/resources/updated',
      params: {uri: 'demo://1'},
    }
    mux.fromServer(updated)
    assert.deepEqual(last(a.got).message, updated)
    assert.equal(b.got.length, 0)
    const changed = {jsonrpc: '2.0', method: 'notifications/tools/list_changed'}
    mux.fromServer(changed)
    assert.deepEqual(last(a.got).message, changed)
    assert.deepEqual(last(b.got).message, changed)
  })

  it('when the server exits, every waiting request gets an error and every session ends', () => {
    const {mux, client} = setup()
    const a = client('a')
    a.send({id: 1, method: 'tools/call', params: {name: 'x'}})
    mux.serverGone('MCP server exited (code 7)')
    assert.deepEqual(a.got[0]!.message, {
      jsonrpc: '2.0',
      id: 1,
      error: {code: SERVER_UNAVAILABLE, message: 'MCP server exited (code 7)'},
    })
    assert.deepEqual(a.ended, ['MCP server exited (code 7)'])
    assert.equal(mux.sessionCount, 0)
  })

  it('answers at once when the server cannot take a request (not reading its stdin)', () => {
    const got: Message[] = []
    const mux = new Multiplexer({
      send: () => false,
      requestTimeoutMs: 60_000,
      logger: createLogger({level: 'error', write: () => undefined}),
    })
    mux.open('a', {deliver: (m) => got.push(m), end: () => undefined})
    mux.fromClient('a', {jsonrpc: '2.0', id: 4, method: 'tools/call', params: {}})
    assert.deepEqual(got, [
      {
        jsonrpc: '2.0',
        id: 4,
        error: {code: SERVER_UNAVAILABLE, message: 'the MCP server is not reading its input'},
      },
    ])
  })
})
