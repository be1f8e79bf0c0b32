import assert from 'node:assert/strict'
import {execFile} from 'node:child_process'
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {promisify} from 'node:util'
import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StdioClientTransport} from '@modelcontextprotocol/sdk/client/stdio.js'
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js'
import {
  EVERYTHING,
  mcpClient,
  runForeground,
  textOf,
  type ForegroundWorkload,
} from '../helpers/workload.ts'

/**
 * `toolgate run NAME -- <stdio server>` end to end: the real server-everything over stdio behind
 * the bridge and the proxy pipeline, driven by real MCP SDK clients over streamable HTTP and
 * legacy SSE, and by the MCP inspector's CLI as an independent second client.
 */
describe('toolgate run (stdio server, streamable HTTP and SSE clients)', () => {
  let home: string
  let workload: ForegroundWorkload
  let first: Client
  const clients: Client[] = []

  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'toolgate-run-'))
    workload = await runForeground('everything', [], EVERYTHING, home)
    // The first initialize reaches the server and decides its capabilities for everyone:
    // declare sampling and elicitation so the server registers the tools that use them.
    first = await mcpClient(workload.url, {capabilities: {sampling: {}, elicitation: {}}})
    clients.push(first)
  })

  after(async () => {
    for (const c of clients) await c.close().catch(() => undefined)
    await workload?.stop()
    await rm(home, {recursive: true, force: true})
  })

  it('answers initialize with the real server identity and lists and calls its tools', async () => {
    const direct = new Client({name: 'direct', version: '1.0.0'})
    await direct.connect(
      new StdioClientTransport({
        command: EVERYTHING[0]!,
        args: EVERYTHING.slice(1),
        stderr: 'ignore',
      }),
    )
    try {
      assert.deepEqual(first.getServerVersion(), direct.getServerVersion())
    } finally {
      await direct.close()
    }
    const tools = await first.listTools()
    assert.ok(tools.tools.some((t) => t.name === 'echo'))
    assert.equal(
      textOf(await first.callTool({name: 'echo', arguments: {message: 'hi'}})),
      'Echo: hi',
    )
  })

  it('delivers progress notifications before the result', async () => {
    const seen: number[] = []
    let resultAt = 0
    const result = await first.callTool(
      {name: 'trigger-long-running-operation', arguments: {duration: 1, steps: 3}},
      undefined,
      {onprogress: () => seen.push(Date.now()), timeout: 30_000},
    )
    resultAt = Date.now()
    assert.equal(seen.length, 3, 'three progress notifications')
    assert.ok(seen.every((t) => t <= resultAt))
    assert.match(textOf(result), /completed/i)
  })

  it('relays a sampling request from the server to the calling client and its answer back', async () => {
    first.setRequestHandler(CreateMessageRequestSchema, async () => ({
      model: 'test-model',
      role: 'assistant',
      content: {type: 'text', text: 'sampled by the client'},
    }))
    const result = await first.callTool({
      name: 'trigger-sampling-request',
      arguments: {prompt: 'hello', maxTokens: 5},
    })
    assert.match(textOf(result), /sampled by the client/)
  })

  it('relays an elicitation request and the client decision', async () => {
    let asked = ''
    first.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked = req.params.message
      return {action: 'decline'}
    })
    const result = await first.callTool({name: 'trigger-elicitation-request', arguments: {}})
    assert.match(asked, /provide inputs/)
    assert.match(textOf(result), /decline/i)
  })

  it('works for a legacy SSE client', async () => {
    assert.ok(workload.sseUrl)
    const sse = await mcpClient(workload.sseUrl!, {sse: true})
    clients.push(sse)
    assert.equal(
      textOf(await sse.callTool({name: 'echo', arguments: {message: 'over sse'}})),
      'Echo: over sse',
    )
    assert.equal(
      textOf(await sse.callTool({name: 'get-sum', arguments: {a: 2, b: 3}})),
      'The sum of 2 and 3 is 5.',
    )
  })

  it('keeps two clients with colliding request ids apart, and one leaving does not hurt the other', async () => {
    const a = await mcpClient(workload.url, {name: 'a'})
    const b = await mcpClient(workload.url, {name: 'b'})
    clients.push(a, b)
    // Both SDK clients number their requests from the same start: the ids collide on purpose.
    const calls = (c: Client, who: string) =>
      Array.from({length: 25}, (_, i) =>
        c.callTool({name: 'echo', arguments: {message: `${who}-${i}`}}).then(textOf),
      )
    const [ra, rb] = await Promise.all([Promise.all(calls(a, 'a')), Promise.all(calls(b, 'b'))])
    assert.deepEqual(
      ra,
      Array.from({length: 25}, (_, i) => `Echo: a-${i}`),
    )
    assert.deepEqual(
      rb,
      Array.from({length: 25}, (_, i) => `Echo: b-${i}`),
    )
    await a.close()
    assert.equal(
      textOf(await b.callTool({name: 'echo', arguments: {message: 'still'}})),
      'Echo: still',
    )
  })

  it('sends resource updates to the subscribed session', async () => {
    const sub = await mcpClient(workload.url, {name: 'subscriber'})
    clients.push(sub)
    const uri = 'demo://resource/dynamic/text/1'
    const updated = new Promise<string>((resolve) =>
      sub.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params.uri)),
    )
    await sub.subscribeResource({uri})
    await sub.callTool({name: 'toggle-subscriber-updates', arguments: {}})
    const got = await Promise.race([
      updated,
      new Promise<string>((_, reject) =>
        setTimeout(() => reject(new Error('no update in 20 s')), 20_000),
      ),
    ])
    assert.equal(got, uri)
    await sub.callTool({name: 'toggle-subscriber-updates', arguments: {}})
  })

  it('serves the MCP inspector CLI as a second, independent client', async () => {
    const {stdout} = await promisify(execFile)(
      process.execPath,
      [
        'node_modules/@modelcontextprotocol/inspector-cli/build/index.js',
        workload.url,
        '--transport',
        'http',
        '--method',
        'tools/call',
        '--tool-name',
        'echo',
        '--tool-arg',
        'message=from-inspector',
      ],
      {timeout: 60_000},
    )
    assert.match(stdout, /Echo: from-inspector/)
  })
})
