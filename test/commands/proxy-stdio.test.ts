import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StdioClientTransport} from '@modelcontextprotocol/sdk/client/stdio.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {CreateMessageRequestSchema} from '@modelcontextprotocol/sdk/types.js'
import {
  freePort,
  startMcpUpstream,
  startRecordingUpstream,
  type McpUpstream,
  type RecordingUpstream,
} from '../helpers/mcp-upstream.ts'
import {driveLogin, startLoginProvider, startProtectedResource} from '../helpers/oidc-login.ts'
import {runCli, waitFor} from '../helpers/proxy-run.ts'
import {EVERYTHING, runForeground, textOf} from '../helpers/workload.ts'

/**
 * `toolgate proxy stdio` as desktop MCP clients use it: the real MCP SDK client starts the command
 * with StdioClientTransport and talks JSON-RPC over its stdin/stdout; behind it, server-everything
 * over streamable HTTP or legacy SSE, a `toolgate run` workload by name, a recording upstream (for
 * credentials) and a real oidc-provider (remote OAuth with DCR + PKCE).
 */
function xdgEnv(home: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: home,
    XDG_CONFIG_HOME: join(home, 'config'),
    XDG_DATA_HOME: join(home, 'data'),
    XDG_STATE_HOME: join(home, 'state'),
    TOOLGATE_SECRETS_PASSWORD: 'test-password-for-the-secrets-file',
    DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent',
  }
}

async function stdioClient(home: string, args: string[], capabilities = {}): Promise<Client> {
  const client = new Client({name: 'desktop', version: '1.0.0'}, {capabilities})
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ['bin/dev.js', 'proxy', 'stdio', ...args],
      env: xdgEnv(home),
      stderr: 'ignore',
    }),
  )
  return client
}

/** Raw lines in, every stdout line out (parsed), for purity and garbage checks. */
async function rawSession(home: string, args: string[], lines: string[], wantAnswers: number) {
  const child = spawn(process.execPath, ['bin/dev.js', 'proxy', 'stdio', ...args], {
    env: xdgEnv(home),
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (err += d.toString()))
  for (const l of lines) child.stdin.write(l + '\n')
  const deadline = Date.now() + 30_000
  while (out.split('\n').filter(Boolean).length < wantAnswers && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50))
  }
  child.stdin.end()
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)))
  const parsed = out
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
  return {code, parsed, out, err}
}

const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: {name: 'raw', version: '1'},
  },
})

describe('toolgate proxy stdio', () => {
  let home: string
  let http: McpUpstream
  let sse: McpUpstream

  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'toolgate-stdio-'))
    http = await startMcpUpstream('streamableHttp')
    sse = await startMcpUpstream('sse')
  })
  after(async () => {
    await http?.stop()
    await sse?.stop()
    await rm(home, {recursive: true, force: true})
  })

  it('relays a streamable-HTTP server faithfully: identity, tools, progress, sampling', async () => {
    const direct = new Client({name: 'direct', version: '1.0.0'})
    await direct.connect(new StreamableHTTPClientTransport(new URL(`${http.url}/mcp`)))
    const client = await stdioClient(home, [`${http.url}/mcp`], {sampling: {}})
    try {
      assert.deepEqual(client.getServerVersion(), direct.getServerVersion())
      assert.deepEqual(client.getServerCapabilities(), direct.getServerCapabilities())
      assert.ok((await client.listTools()).tools.some((t) => t.name === 'echo'))
      assert.equal(
        textOf(await client.callTool({name: 'echo', arguments: {message: 'hi'}})),
        'Echo: hi',
      )
      let progress = 0
      await client.callTool(
        {name: 'trigger-long-running-operation', arguments: {duration: 1, steps: 2}},
        undefined,
        {onprogress: () => progress++},
      )
      // The last progress and the result can arrive in one read: the SDK client may then settle
      // the call before its progress handler runs. Earlier steps always arrive first.
      assert.ok(progress >= 1, `progress notifications relayed: ${progress}`)
      client.setRequestHandler(CreateMessageRequestSchema, async () => ({
        model: 'm',
        role: 'assistant',
        content: {type: 'text', text: 'from the desktop client'},
      }))
      const sampled = await client.callTool({
        name: 'trigger-sampling-request',
        arguments: {prompt: 'p'},
      })
      assert.match(textOf(sampled), /from the desktop client/)
      const many = await Promise.all(
        Array.from({length: 32}, (_, i) =>
          client.callTool({name: 'echo', arguments: {message: `m${i}`}}),
        ),
      )
      assert.deepEqual(
        many.map(textOf),
        Array.from({length: 32}, (_, i) => `Echo: m${i}`),
      )
    } finally {
      await client.close()
      await direct.close()
    }
  })

  it('falls back to legacy SSE when the server answers the POST with 404/405 (auto)', async () => {
    const client = await stdioClient(home, [`${sse.url}/sse`])
    try {
      assert.equal(
        textOf(await client.callTool({name: 'echo', arguments: {message: 'sse'}})),
        'Echo: sse',
      )
    } finally {
      await client.close()
    }
  })

  it('reaches a toolgate run workload by name', async () => {
    const w = await runForeground('desk', [], EVERYTHING, home)
    try {
      const client = await stdioClient(home, ['desk'])
      assert.equal(
        textOf(await client.callTool({name: 'echo', arguments: {message: 'by name'}})),
        'Echo: by name',
      )
      await client.close()
    } finally {
      await w.stop()
    }
    const gone = runCli(['proxy', 'stdio', 'desk'], home)
    assert.equal(await gone.exited, 1)
    assert.match(gone.stderr(), /workload "desk" is not running/)
    assert.equal(gone.stdout(), '')
  })

  it('answers garbage on stdin with JSON-RPC errors on stdout and keeps working', async () => {
    const huge = 'x'.repeat(17 * 1024 * 1024)
    const ping = JSON.stringify({jsonrpc: '2.0', id: 2, method: 'ping'})
    const r = await rawSession(
      home,
      [`${http.url}/mcp`],
      ['not json', '[1, "two"]', huge, INIT, ping],
      6,
    )
    assert.equal(r.code, 0, r.err)
    const errors = r.parsed.filter((m) => m.id === null)
    assert.deepEqual(
      errors.map((m) => (m.error as {code: number}).code),
      [-32700, -32600, -32600, -32700],
    )
    assert.ok(
      r.parsed.some((m) => m.id === 1 && m.result),
      'initialize answered',
    )
    assert.ok(
      r.parsed.some((m) => m.id === 2 && m.result),
      'ping answered after the garbage',
    )
    for (const m of r.parsed) assert.equal(m.jsonrpc, '2.0')
  })

  it('survives the server restarting mid-session (the forgotten session is re-initialized)', async () => {
    const port = await freePort()
    const env = {...process.env, PORT: String(port)}
    const startServer = () =>
      spawn(process.execPath, [EVERYTHING[1]!, 'streamableHttp'], {env, stdio: 'ignore'})
    const waitUp = async () => {
      for (let i = 0; i < 100; i++) {
        const ok = await fetch(`http://127.0.0.1:${port}/mcp`).then(
          () => true,
          () => false,
        )
        if (ok) return
        await new Promise((r) => setTimeout(r, 100))
      }
    }
    let server = startServer()
    await waitUp()
    const client = await stdioClient(home, [`http://127.0.0.1:${port}/mcp`])
    try {
      assert.equal(
        textOf(await client.callTool({name: 'echo', arguments: {message: 'before'}})),
        'Echo: before',
      )
      server.kill('SIGKILL')
      await new Promise((r) => server.once('exit', r))
      server = startServer()
      await waitUp()
      assert.equal(
        textOf(await client.callTool({name: 'echo', arguments: {message: 'after'}})),
        'Echo: after',
      )
    } finally {
      await client.close()
      server.kill('SIGKILL')
    }
  })
})

describe('toolgate proxy stdio: outgoing credentials', () => {
  let home: string
  let recorder: RecordingUpstream
  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'toolgate-stdio-auth-'))
    recorder = await startRecordingUpstream()
    recorder.respond((req, res, rec) => {
      req.on('end', () => {
        const msg = JSON.parse(rec.body.toString() || '{}') as {id?: unknown}
        res.writeHead(200, {'content-type': 'application/json'})
        res.end(JSON.stringify({jsonrpc: '2.0', id: msg.id, result: {}}))
      })
    })
  })
  after(async () => {
    await recorder?.close()
    await rm(home, {recursive: true, force: true})
  })

  it('sends the bearer token and --header values, never its own stdout noise', async () => {
    const tokenFile = join(home, 'token')
    await writeFile(tokenFile, 'stdio-bearer-42\n', {mode: 0o600})
    const r = await rawSession(
      home,
      [
        `${recorder.url}/mcp`,
        '--remote-auth-bearer-token-file',
        tokenFile,
        '--header',
        'X-Tenant=acme',
      ],
      [INIT],
      1,
    )
    assert.equal(r.code, 0, r.err)
    assert.deepEqual(r.parsed, [{jsonrpc: '2.0', id: 1, result: {}}])
    const seen = recorder.requests.find((q) => q.method === 'POST')
    assert.equal(seen?.headers.authorization, 'Bearer stdio-bearer-42')
    assert.equal(seen?.headers['x-tenant'], 'acme')
    assert.doesNotMatch(r.err, /stdio-bearer-42/)
  })

  it('logs in with OAuth (DCR + PKCE) before forwarding, holds messages meanwhile, and restores the login', async () => {
    const audience = 'https://mcp.example.test/mcp'
    const idp = await startLoginProvider({accessTokenTtl: 600})
    const upstream = await startProtectedResource(idp.issuer, audience)
    const args = [
      upstream.url,
      '--remote-auth',
      '--remote-auth-issuer',
      idp.issuer,
      '--remote-auth-skip-browser',
      '--remote-auth-callback-port',
      String(await freePort()),
      '--remote-auth-resource',
      audience,
    ]
    try {
      const proc = spawn(process.execPath, ['bin/dev.js', 'proxy', 'stdio', ...args], {
        env: xdgEnv(home),
        stdio: ['pipe', 'pipe', 'pipe'],
      })
      let out = ''
      let err = ''
      proc.stdout.on('data', (d: Buffer) => (out += d.toString()))
      proc.stderr.on('data', (d: Buffer) => (err += d.toString()))
      proc.stdin.write(INIT + '\n') // held until the login is done
      const url = await waitFor(
        'the login URL',
        () => /^\s+(http:\/\/\S+\/auth\?\S+)$/m.exec(err)?.[1],
        {child: proc, stdout: () => out, stderr: () => err, exited: new Promise(() => undefined)},
      )
      assert.equal(upstream.calls.length, 0, 'nothing forwarded before the login')
      assert.equal((await driveLogin(url, {login: 'dana'})).status, 200)
      for (let i = 0; i < 100 && !upstream.calls.some((c) => c.ok); i++)
        await new Promise((r) => setTimeout(r, 100))
      assert.ok(
        upstream.calls.some((c) => c.ok),
        'the held initialize went out with a token',
      )
      proc.stdin.end()
      assert.equal(await new Promise((r) => proc.once('exit', r)), 0)
      for (const line of out.split('\n').filter(Boolean))
        assert.equal((JSON.parse(line) as {jsonrpc: string}).jsonrpc, '2.0')

      // A second start restores the saved login: no URL, the request goes out at once.
      const before = upstream.calls.filter((c) => c.ok).length
      const again = await rawSession(home, args, [INIT], 1)
      assert.equal(again.code, 0)
      assert.doesNotMatch(again.err, /\/auth\?/)
      assert.ok(upstream.calls.filter((c) => c.ok).length > before)
    } finally {
      await upstream.close()
      await idp.close()
    }
  })
})
