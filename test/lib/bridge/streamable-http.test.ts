import assert from 'node:assert/strict'
import {PassThrough} from 'node:stream'
import {after, before, describe, it} from 'node:test'
import {Agent} from 'undici'
import {startBridge, type Bridge} from '../../../src/lib/bridge/bridge-server.ts'
import {SharedLane} from '../../../src/lib/bridge/lane.ts'
import {readLines} from '../../../src/lib/bridge/line-reader.ts'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {
  encodePrincipalField,
  PRINCIPAL_FIELD,
  principalKey,
} from '../../../src/lib/sessions/principal-key.ts'

/**
 * The bridge's HTTP side (streamable HTTP and legacy SSE) on its real private socket, with a
 * "server" on the other end of the stdio pipes that answers every request at once: session
 * rules, the errors a hostile or sloppy client gets, sessions owned by principals (issue 30,
 * finding 3), quotas (finding 4) and the expiry of sessions abandoned without DELETE.
 */

const ALICE = encodePrincipalField(
  principalKey({provider: 'p', subject: 'alice', claims: {iss: 'https://op'}}),
)
const BOB = encodePrincipalField(
  principalKey({provider: 'p', subject: 'bob', claims: {iss: 'https://op'}}),
)

/** A stdio "server" on pipes: answers each request with its method, notes what it was sent. */
function echoPeer() {
  const stdin = new PassThrough()
  const stdout = new PassThrough()
  const seen: Record<string, unknown>[] = []
  readLines(
    stdin,
    (line) => {
      const m = JSON.parse(line) as Record<string, unknown>
      seen.push(m)
      if ('id' in m && typeof m.method === 'string')
        stdout.write(JSON.stringify({jsonrpc: '2.0', id: m.id, result: {method: m.method}}) + '\n')
    },
    {maxLineBytes: 1 << 20, onOversize: () => undefined},
  )
  return {stdin, stdout, seen}
}

interface TestBridge {
  bridge: Bridge
  lane: SharedLane
  peer: ReturnType<typeof echoPeer>
  clock: {now: number}
  logs: () => string
  request(
    path: string,
    init?: {method?: string; body?: string; headers?: Record<string, string>; as?: string},
  ): Promise<Response>
  close(): Promise<void>
}

async function testBridge(
  options: {maxPerPrincipal?: number; maxTotal?: number} = {},
): Promise<TestBridge> {
  const memory = createMemoryLogger()
  const logger = memory
  const lane = new SharedLane({logger, requestTimeoutMs: 5_000, onNoise: () => undefined})
  const peer = echoPeer()
  lane.lane.attach(peer)
  const clock = {now: Date.now()}
  const bridge = await startBridge(
    {
      logger,
      maxBodyBytes: 1024,
      sessionLimits: {
        maxPerPrincipal: options.maxPerPrincipal ?? 3,
        maxTotal: options.maxTotal ?? 5,
      },
      sweepMs: 20,
      now: () => clock.now,
    },
    lane,
  )
  const agent = new Agent({connect: {socketPath: bridge.socketPath}})
  return {
    bridge,
    lane,
    peer,
    clock,
    logs: () => memory.lines.join('\n'),
    request: (path, init = {}) =>
      fetch(`http://bridge${path}`, {
        method: init.method ?? 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          [PRINCIPAL_FIELD]: init.as ?? ALICE,
          ...init.headers,
        },
        ...(init.body !== undefined ? {body: init.body} : {}),
        // @ts-expect-error undici's dispatcher option on fetch
        dispatcher: agent,
      }),
    async close() {
      await bridge.close()
      await agent.close()
    },
  }
}

const INIT = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'

async function init(b: TestBridge, as = ALICE): Promise<string> {
  const res = await b.request('/mcp', {body: INIT, as})
  assert.equal(res.status, 200)
  assert.deepEqual(await res.json(), {jsonrpc: '2.0', id: 1, result: {method: 'initialize'}})
  return res.headers.get('mcp-session-id')!
}

describe('bridge streamable HTTP endpoint', () => {
  let b: TestBridge
  before(async () => {
    b = await testBridge()
  })
  after(() => b.close())

  it('creates a session on initialize and answers requests in it as JSON', async () => {
    const sid = await init(b)
    const res = await b.request('/mcp', {
      body: '{"jsonrpc":"2.0","id":"a","method":"tools/list"}',
      headers: {'mcp-session-id': sid},
    })
    assert.deepEqual(await res.json(), {jsonrpc: '2.0', id: 'a', result: {method: 'tools/list'}})
    const note = await b.request('/mcp', {
      body: '{"jsonrpc":"2.0","method":"notifications/initialized"}',
      headers: {'mcp-session-id': sid},
    })
    assert.equal(note.status, 202)
    const del = await b.request('/mcp', {method: 'DELETE', headers: {'mcp-session-id': sid}})
    assert.equal(del.status, 200)
  })

  it('refuses what a sloppy or hostile client sends, with the right status', async () => {
    const sid = await init(b)
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
      [INIT, {'mcp-session-id': sid}, 400],
    ]
    for (const [body, headers, status] of cases) {
      const res = await b.request('/mcp', {body, headers})
      assert.equal(res.status, status, `${body.slice(0, 40)} ${JSON.stringify(headers)}`)
      await res.body?.cancel()
    }
    const sse = {accept: 'text/event-stream', 'mcp-session-id': sid}
    const get = await b.request('/mcp', {method: 'GET', headers: sse})
    assert.equal(get.status, 200)
    const second = await b.request('/mcp', {method: 'GET', headers: sse})
    assert.equal(second.status, 409, 'one standalone stream per session')
    await get.body?.cancel()
    await b.request('/mcp', {method: 'DELETE', headers: {'mcp-session-id': sid}})
  })
})

describe('bridge sessions belong to the principal that created them (issue 30)', () => {
  let b: TestBridge
  before(async () => {
    b = await testBridge({maxPerPrincipal: 8, maxTotal: 16})
  })
  after(() => b.close())

  it('another principal presenting a session id gets exactly what an unknown id gets, on POST, GET and DELETE', async () => {
    const sid = await init(b, ALICE)
    const unknown = '00000000-0000-4000-8000-000000000000'
    const attempts = (id: string) => [
      b.request('/mcp', {
        as: BOB,
        body: '{"jsonrpc":"2.0","id":5,"method":"tools/list"}',
        headers: {'mcp-session-id': id},
      }),
      b.request('/mcp', {
        as: BOB,
        method: 'GET',
        headers: {accept: 'text/event-stream', 'mcp-session-id': id},
      }),
      b.request('/mcp', {as: BOB, method: 'DELETE', headers: {'mcp-session-id': id}}),
      // an answer to a server request, slipped into alice's session
      b.request('/mcp', {
        as: BOB,
        body: '{"jsonrpc":"2.0","id":0,"result":{}}',
        headers: {'mcp-session-id': id},
      }),
    ]
    const stolen = await Promise.all(attempts(sid))
    const missing = await Promise.all(attempts(unknown))
    for (let i = 0; i < stolen.length; i++) {
      assert.equal(stolen[i]!.status, 404)
      assert.equal(stolen[i]!.status, missing[i]!.status)
      assert.deepEqual(await stolen[i]!.json(), await missing[i]!.json())
    }
    assert.match(b.logs(), /refused a session id presented by another principal/)
    assert.doesNotMatch(b.logs(), new RegExp(sid), 'the session id itself is never logged')
    // alice's session is intact: bob's DELETE did nothing.
    const res = await b.request('/mcp', {
      body: '{"jsonrpc":"2.0","id":6,"method":"tools/list"}',
      headers: {'mcp-session-id': sid},
    })
    assert.equal(res.status, 200)
    assert.ok(!b.peer.seen.some((m) => m.id === 5), "bob's call never reached the server")
  })

  it('legacy SSE: another principal cannot post into a session', async () => {
    const stream = await b.request('/sse', {method: 'GET', headers: {accept: 'text/event-stream'}})
    assert.equal(stream.status, 200)
    const reader = stream.body!.getReader()
    let text = ''
    while (!text.includes('\n\n')) text += new TextDecoder().decode((await reader.read()).value)
    const endpoint = /data: (\S+)/.exec(text)![1]!
    const bob = await b.request(endpoint, {
      as: BOB,
      body: '{"jsonrpc":"2.0","id":7,"method":"tools/list"}',
    })
    assert.equal(bob.status, 404)
    const alice = await b.request(endpoint, {
      body: '{"jsonrpc":"2.0","id":8,"method":"tools/list"}',
    })
    assert.equal(alice.status, 202)
    await reader.cancel()
  })
})

describe('bridge session quotas (issue 30, finding 4)', () => {
  it('one principal cannot fill the table: past its quota it gets 429, others still get sessions', async () => {
    const b = await testBridge({maxPerPrincipal: 3, maxTotal: 5})
    try {
      for (let i = 0; i < 3; i++) await init(b, ALICE)
      const over = await b.request('/mcp', {body: INIT, as: ALICE})
      assert.equal(over.status, 429)
      assert.ok(Number(over.headers.get('retry-after')) > 0)
      assert.match(
        ((await over.json()) as {error: {message: string}}).error.message,
        /too many sessions for this caller \(3\)/,
      )
      await init(b, BOB)
      await init(b, BOB)
      const full = await b.request('/mcp', {body: INIT, as: encodePrincipalField('["x","carol"]')})
      assert.equal(full.status, 503, 'the total bound still holds')
      await full.body?.cancel()
    } finally {
      await b.close()
    }
  })

  it('a session that never sent a request expires after a minute; a used one lives on until idle', async () => {
    const b = await testBridge({maxPerPrincipal: 2, maxTotal: 10})
    try {
      const unused = await init(b)
      const used = await init(b)
      const call = await b.request('/mcp', {
        body: '{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
        headers: {'mcp-session-id': used},
      })
      assert.equal(call.status, 200)
      await call.body?.cancel()
      b.clock.now += 61_000
      await new Promise((r) => setTimeout(r, 100)) // the sweep runs every 20 ms here
      const ping = (sid: string) =>
        b.request('/mcp', {
          body: '{"jsonrpc":"2.0","id":3,"method":"ping"}',
          headers: {'mcp-session-id': sid},
        })
      assert.equal((await ping(unused)).status, 404, 'unused: expired')
      assert.equal((await ping(used)).status, 200, 'used: alive')
      // The expired one no longer counts against the quota.
      await init(b)
      b.clock.now += 11 * 60_000
      await new Promise((r) => setTimeout(r, 100))
      assert.equal((await ping(used)).status, 404, 'idle for ten minutes: expired')
      assert.equal(b.bridge.sessions, 0)
    } finally {
      await b.close()
    }
  })
})
