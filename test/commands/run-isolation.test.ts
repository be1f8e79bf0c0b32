/**
 * Two users of one workload (issue 30): `toolgate run` with incoming OIDC (a real oidc-provider)
 * in front of a stdio fixture server whose tools send sampling and elicitation mid-call, keep
 * memory in their process, and log. Real MCP SDK clients for alice and bob. Nothing of one user's
 * reaches the other, in every isolation mode.
 */
import assert from 'node:assert/strict'
import {readFileSync} from 'node:fs'
import {mkdtemp, rm} from 'node:fs/promises'
import {connect} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {setTimeout as sleep} from 'node:timers/promises'
import type {Client} from '@modelcontextprotocol/sdk/client/index.js'
import type {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js'
import {startOidcProvider, type OidcProviderFixture} from '../helpers/oidc-provider.ts'
import {runCli} from '../helpers/proxy-run.ts'
import {mcpClient, runForeground, textOf, type ForegroundWorkload} from '../helpers/workload.ts'

const TENANT = [process.execPath, 'test/fixtures/mcp/tenant-server.ts']

let idp: OidcProviderFixture
let home: string
const tokens: Record<string, string> = {}

before(async () => {
  home = await mkdtemp(join(tmpdir(), 'toolgate-isolation-'))
  idp = await startOidcProvider()
  tokens.alice = await idp.issueAccessToken({sub: 'alice'})
  tokens.bob = await idp.issueAccessToken({sub: 'bob'})
})
after(async () => {
  await idp?.close()
  if (home) await rm(home, {recursive: true, force: true})
})

/** An SDK client that answers sampling and elicitation with its own name, and records them. */
interface User {
  client: Client
  sampled: string[]
  elicited: string[]
  logs: string[]
}

async function user(url: string, who: 'alice' | 'bob'): Promise<User> {
  const client = await mcpClient(url, {
    token: tokens[who]!,
    name: who,
    capabilities: {sampling: {}, elicitation: {}},
  })
  const u: User = {client, sampled: [], elicited: [], logs: []}
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    const first = req.params.messages[0]?.content as {text?: string}
    u.sampled.push(first.text ?? '')
    return {role: 'assistant', model: 'test', content: {type: 'text', text: `${who}'s model`}}
  })
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    u.elicited.push(req.params.message)
    return {action: 'accept', content: {ok: who === 'alice'}}
  })
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    u.logs.push(String(n.params.data))
  })
  return u
}

const call = async (u: User, name: string, args: Record<string, unknown> = {}) =>
  u.client.callTool({name, arguments: args}, undefined, {timeout: 20_000})

async function workload(name: string, extra: string[]): Promise<ForegroundWorkload> {
  return runForeground(
    name,
    ['--oidc-issuer', idp.issuer, '--oidc-audience', idp.audience, ...extra],
    TENANT,
    home,
  )
}

describe('--isolation shared: one process, server requests never guessed across callers', () => {
  let w: ForegroundWorkload
  let alice: User
  let bob: User
  before(async () => {
    w = await workload('shared', ['--isolation', 'shared'])
    alice = await user(w.url, 'alice')
    bob = await user(w.url, 'bob')
  })
  after(async () => {
    await alice?.client.close()
    await bob?.client.close()
    await w?.stop()
  })

  it('sampling and elicitation reach the caller whose call is the only one in flight', async () => {
    assert.equal(
      textOf(await call(alice, 'ask', {prompt: 'alice: private'})),
      "answer: alice's model",
    )
    assert.match(textOf(await call(alice, 'confirm', {question: 'alice: ok?'})), /"ok":true/)
    assert.deepEqual(alice.sampled, ['alice: private'])
    assert.deepEqual(alice.elicited, ['alice: ok?'])
    assert.deepEqual(bob.sampled, [])
    assert.deepEqual(bob.elicited, [])
  })

  it('with calls of two callers in flight a server request is refused, never delivered to either', async () => {
    const held = call(bob, 'hold')
    await sleep(300) // bob's call is in flight at the server
    const asked = await call(alice, 'ask', {prompt: 'alice: secret prompt'})
    assert.equal(asked.isError, true)
    assert.match(textOf(asked), /cannot tell which of 2 callers/)
    const confirmed = await call(alice, 'confirm', {question: 'alice: secret question'})
    assert.equal(confirmed.isError, true)
    assert.ok(!bob.sampled.some((p) => p.includes('secret')), "bob never saw alice's prompt")
    assert.ok(!bob.elicited.some((p) => p.includes('secret')))
    assert.ok(!alice.sampled.includes('alice: secret prompt'), 'and it was not guessed to be hers')
    await call(alice, 'release')
    assert.equal(textOf(await held), 'released')
    const log = w.run.stderr()
    assert.match(log, /server request not delivered/)
  })

  it("a session id is the creator's alone: bob with alice's id gets 404 on POST, GET and DELETE", async () => {
    const sid = (alice.client.transport as unknown as {sessionId: string}).sessionId
    assert.ok(sid)
    const headers = (extra: Record<string, string> = {}) => ({
      authorization: `Bearer ${tokens.bob}`,
      'mcp-session-id': sid,
      'mcp-protocol-version': '2025-06-18',
      ...extra,
    })
    const post = await fetch(w.url, {
      method: 'POST',
      headers: headers({
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      }),
      body: '{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"whoami","arguments":{}}}',
    })
    const get = await fetch(w.url, {headers: headers({accept: 'text/event-stream'})})
    const del = await fetch(w.url, {method: 'DELETE', headers: headers()})
    for (const res of [post, get, del]) {
      assert.equal(res.status, 404)
      assert.match(await res.text(), /Session not found/)
    }
    // alice's session is untouched
    assert.match(textOf(await call(alice, 'whoami')), /^\d+$/)
  })

  it("log levels are per session: alice's setLevel does not silence bob", async () => {
    await alice.client.setLoggingLevel('error')
    alice.logs.length = 0
    bob.logs.length = 0
    await call(bob, 'log', {level: 'info', text: 'info-1'})
    await call(alice, 'log', {level: 'error', text: 'error-1'})
    await sleep(200)
    assert.deepEqual(bob.logs, ['info-1', 'error-1'], 'bob set no level: he hears everything')
    assert.deepEqual(alice.logs, ['error-1'], 'alice hears errors only')
  })
})

describe('--isolation principal: a process per caller', () => {
  let w: ForegroundWorkload
  let alice: User
  let alice2: User
  let bob: User
  before(async () => {
    w = await workload('per-principal', []) // the default with incoming auth
    alice = await user(w.url, 'alice')
    alice2 = await user(w.url, 'alice')
    bob = await user(w.url, 'bob')
  })
  after(async () => {
    await Promise.all([alice, alice2, bob].map((u) => u?.client.close()))
    await w?.stop()
  })

  it("each principal has its own server process and memory; one principal's sessions share one", async () => {
    const [a, a2, b] = await Promise.all([alice, alice2, bob].map((u) => call(u, 'whoami')))
    assert.equal(textOf(a), textOf(a2))
    assert.notEqual(textOf(a), textOf(b))
    assert.equal(textOf(await call(alice, 'remember', {note: 'alice-note'})), 'alice-note')
    assert.equal(textOf(await call(bob, 'remember', {note: 'bob-note'})), 'bob-note')
    assert.equal(textOf(await call(alice2, 'remember', {note: 'more'})), 'alice-note,more')
  })

  it('sampling reaches its caller even while another caller has a call in flight', async () => {
    const held = call(bob, 'hold')
    await sleep(200)
    assert.equal(textOf(await call(alice, 'ask', {prompt: 'alice: own'})), "answer: alice's model")
    assert.ok(!bob.sampled.includes('alice: own'))
    await call(bob, 'release')
    await held
  })

  it('list shows the mode and the processes with their principals', async () => {
    const r = runCli(['list', '--json'], home)
    await r.exited
    const {workloads: rows} = JSON.parse(r.stdout()) as {
      workloads: {
        name: string
        isolation?: string
        processes?: {principal?: string; pid?: number}[]
      }[]
    }
    const row = rows.find((x) => x.name === 'per-principal')!
    assert.equal(row.isolation, 'principal')
    const principals = (row.processes ?? []).map((p) => p.principal).sort()
    assert.deepEqual(principals, ['alice', 'bob'])
    const table = runCli(['list'], home)
    await table.exited
    assert.match(table.stdout(), /per-principal .* principal \(2 processes\)/)
  })
})

describe('--isolation principal --max-processes 1: past the limit 503 with Retry-After', () => {
  it('a second caller waits while the first has a session; once it is idle it is stopped for the next', async () => {
    const w = await workload('one-process', ['--max-processes', '1', '--idle-timeout', '1h'])
    let alice: User | undefined
    try {
      alice = await user(w.url, 'alice')
      const res = await fetch(w.url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${tokens.bob}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: {name: 'b', version: '1'},
          },
        }),
      })
      assert.equal(res.status, 503)
      assert.ok(Number(res.headers.get('retry-after')) >= 1)
      assert.match(await res.text(), /all 1 server processes are in use/)
      await end(alice) // DELETE: alice's process is idle now
      alice = undefined
      const bob = await user(w.url, 'bob')
      assert.match(textOf(await call(bob, 'whoami')), /^\d+$/)
      await bob.client.close()
    } finally {
      await alice?.client.close()
      await w.stop()
    }
  })
})

describe('--isolation session: a process per client session', () => {
  it('two sessions of one caller get two processes; a process ends with its session', async () => {
    const w = await workload('per-session', ['--isolation', 'session'])
    try {
      const one = await user(w.url, 'alice')
      const two = await user(w.url, 'alice')
      const p1 = Number(textOf(await call(one, 'whoami')))
      const p2 = Number(textOf(await call(two, 'whoami')))
      assert.notEqual(p1, p2)
      await end(one)
      const deadline = Date.now() + 10_000
      while (alive(p1) && Date.now() < deadline) await sleep(100)
      assert.equal(alive(p1), false, 'the first session ended: its process was stopped')
      assert.equal(alive(p2), true)
      await two.client.close()
    } finally {
      await w.stop()
    }
  })
})

/** Ends the client's session with DELETE, as a client that says goodbye does, and closes it. */
async function end(u: User): Promise<void> {
  await (u.client.transport as StreamableHTTPClientTransport).terminateSession()
  await u.client.close()
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe('one buffer budget for every client stream (issue 30, finding 5)', () => {
  it('30 unread streams and 40 broadcasts of 1 MiB stay within the budget', async () => {
    const w = await runForeground('budget', ['--isolation', 'shared'], TENANT, home)
    const sockets: ReturnType<typeof connect>[] = []
    try {
      const port = new URL(w.url).port
      // 30 sessions, each with a standalone GET stream its client never reads.
      for (let i = 0; i < 30; i++) {
        const res = await fetch(w.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: {
              protocolVersion: '2025-06-18',
              capabilities: {},
              clientInfo: {name: 'slow', version: '1'},
            },
          }),
        })
        const sid = res.headers.get('mcp-session-id')!
        await res.body?.cancel()
        const socket = connect({host: '127.0.0.1', port: Number(port)})
        socket.pause() // never read: the stream's bytes pile up in toolgate
        socket.write(
          `GET /mcp HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\naccept: text/event-stream\r\nmcp-session-id: ${sid}\r\nmcp-protocol-version: 2025-06-18\r\n\r\n`,
        )
        sockets.push(socket)
      }
      await sleep(500)
      const before = peakRss(w.run.child.pid!)
      const caller = await mcpClient(w.url, {name: 'caller'})
      const sent = await caller.callTool(
        {name: 'broadcast', arguments: {count: 40, bytes: 1 << 20}},
        undefined,
        {timeout: 60_000},
      )
      assert.equal(textOf(sent), 'sent 40')
      await sleep(1000)
      const grown = peakRss(w.run.child.pid!) - before
      // Before the budget: 96 → 670 MB. Now what is held stays near the 64 MiB budget (plus
      // the messages being written and the kernel's socket buffers).
      assert.ok(grown < 200 * 1024 * 1024, `peak RSS grew by ${Math.round(grown / 1048576)} MB`)
      assert.match(w.run.stderr(), /cut the slowest client stream/)
      await caller.close()
    } finally {
      for (const s of sockets) s.destroy()
      await w.stop()
    }
  })
})

/** The process's peak resident set (Linux VmHWM), in bytes. */
function peakRss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) * 1024
}
