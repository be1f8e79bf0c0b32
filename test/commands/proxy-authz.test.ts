import assert from 'node:assert/strict'
import {spawn, type ChildProcess} from 'node:child_process'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {createServer, request as httpRequest, type Server} from 'node:http'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {gunzipSync, gzipSync} from 'node:zlib'
import {after, before, describe, it} from 'node:test'
import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {McpServer} from '@modelcontextprotocol/sdk/server/mcp.js'
import {StreamableHTTPServerTransport} from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import {z} from 'zod'
import {loadAuthzInterceptor} from '../../src/lib/authz/index.ts'
import {createAuthenticator} from '../../src/lib/auth/index.ts'
import {createLogger} from '../../src/lib/log/logger.ts'
import {oauthConfigFromOidc} from '../../src/lib/proxy/incoming-auth.ts'
import {proxyConfigFromFlags} from '../../src/lib/proxy/options.ts'
import {startProxy} from '../../src/lib/proxy/proxy-server.ts'
import {startMcpUpstream, type McpUpstream} from '../helpers/mcp-upstream.ts'
import {startOidcProvider, type OidcProviderFixture} from '../helpers/oidc-provider.ts'

/**
 * End to end: the real `toolgate proxy` CLI with `--authz-config`, a real oidc-provider issuing JWTs
 * with groups/roles claims, and real MCP servers behind it — server-everything (answers POSTs with
 * SSE) and an MCP SDK server in JSON-response mode — driven by the real MCP SDK client and by raw
 * HTTP where exact bodies matter.
 */

const POLICIES = [
  // everyone may call echo
  'permit(principal, action == Action::"call_tool", resource == Tool::"echo");',
  // one client on one tool
  'permit(principal == Client::"alice", action == Action::"call_tool", resource == Tool::"get-sum");',
  // a group (from the groups claim) may call read-only tools, by the server's own annotations
  'permit(principal in ToolgateGroup::"admins", action == Action::"call_tool", resource) when { resource has readOnlyHint && resource.readOnlyHint };',
  // a role (from the roles claim) by attribute
  'permit(principal, action == Action::"call_tool", resource == Tool::"toggle-simulated-logging") when { principal has claim_roles && principal.claim_roles.contains("operator") };',
  // forbid beats the group permit above
  'forbid(principal, action == Action::"call_tool", resource == Tool::"get-env");',
  'permit(principal, action == Action::"get_prompt", resource == Prompt::"simple-prompt");',
  'permit(principal, action == Action::"read_resource", resource == Resource::"demo://resource/static/document/architecture.md");',
]

interface ProxyProcess {
  url: string
  child?: ChildProcess
  stderr(): string
  stop(): Promise<void>
}

/**
 * The proxy built in-process exactly as `toolgate proxy` builds it (proxyConfigFromFlags, then
 * loadAuthzInterceptor, then startProxy), except that the validator is told the loopback issuer
 * is allowed (allowPrivateIP): the identity provider of this test runs on 127.0.0.1.
 */
async function startProxyInProcess(
  name: string,
  flags: {target: string; issuer: string; audience: string; policyFile: string},
): Promise<ProxyProcess> {
  const lines: string[] = []
  const logger = createLogger({level: 'debug', write: (l) => lines.push(l)})
  const config = proxyConfigFromFlags(
    name,
    {
      'target-uri': flags.target,
      host: '127.0.0.1',
      'max-request-body-size': 0,
      'oidc-issuer': flags.issuer,
      'oidc-audience': flags.audience,
    },
    {logger},
  )
  config.interceptor = await loadAuthzInterceptor(flags.policyFile, {logger})
  const oauth = oauthConfigFromOidc(config.oidc!, config.resourceUrl)
  for (const p of oauth.providers) p.allowPrivateIP = true
  const running = await startProxy(config, {
    logger,
    authenticator: createAuthenticator(oauth, {logger}),
  })
  return {url: running.url, stderr: () => lines.join('\n'), stop: () => running.close()}
}

async function startProxyCli(args: string[]): Promise<ProxyProcess> {
  const child = spawn(process.execPath, ['bin/dev.js', 'proxy', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: process.cwd(),
  })
  let out = ''
  let err = ''
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`proxy did not start in time: ${err}`)), 60_000)
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString()
      const line = out.split('\n').find((l) => l.startsWith('{'))
      if (line) {
        clearTimeout(timer)
        resolve((JSON.parse(line) as {url: string}).url)
      }
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`proxy exited with ${code}: ${err}`))
    })
  })
  return {
    url,
    child,
    stderr: () => err,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))])
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    },
  }
}

/** The MCP SDK's own server in stateless JSON-response mode (`enableJsonResponse`). */
async function startJsonMcpServer(): Promise<{url: string; server: Server}> {
  const server = createServer(async (req, res) => {
    const mcp = new McpServer({name: 'json-server', version: '1.0.0'})
    mcp.registerTool(
      'safe-read',
      {description: 'reads', annotations: {readOnlyHint: true}},
      async () => ({content: [{type: 'text', text: 'read'}]}),
    )
    mcp.registerTool(
      'wipe',
      {description: 'wipes', annotations: {readOnlyHint: false, destructiveHint: true}},
      async () => ({content: [{type: 'text', text: 'wiped'}]}),
    )
    mcp.registerTool(
      'echo',
      {description: 'echo', inputSchema: {message: z.string()}},
      async ({message}) => ({content: [{type: 'text', text: message}]}),
    )
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    })
    res.on('close', () => {
      void transport.close()
      void mcp.close()
    })
    await mcp.connect(transport)
    await transport.handleRequest(req, res)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {url: `http://127.0.0.1:${(server.address() as {port: number}).port}`, server}
}

async function mcpClient(
  proxyUrl: string,
  token: string,
): Promise<{client: Client; transport: StreamableHTTPClientTransport}> {
  const transport = new StreamableHTTPClientTransport(new URL(proxyUrl + '/mcp'), {
    requestInit: {headers: {authorization: `Bearer ${token}`}},
  })
  const client = new Client({name: 'toolgate-authz-test', version: '1.0.0'})
  await client.connect(transport)
  return {client, transport}
}

async function post(
  url: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<{status: number; type: string | null; text: string}> {
  const res = await fetch(url + '/mcp', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
      ...headers,
    },
    body,
    signal: AbortSignal.timeout(30_000),
  })
  return {status: res.status, type: res.headers.get('content-type'), text: await res.text()}
}

const rpc = (id: number | string | undefined, method: string, params?: unknown) =>
  JSON.stringify({
    jsonrpc: '2.0',
    ...(id === undefined ? {} : {id}),
    method,
    ...(params === undefined ? {} : {params}),
  })

describe('toolgate proxy --authz-config (end to end)', () => {
  let dir: string
  let idp: OidcProviderFixture
  let everything: McpUpstream
  let jsonServer: {url: string; server: Server}
  let proxy: ProxyProcess
  let jsonProxy: ProxyProcess
  const tokens: Record<'alice' | 'bob' | 'carol', string> = {alice: '', bob: '', carol: ''}
  const clients: Client[] = []

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolgate-authz-e2e-'))
    const policyFile = join(dir, 'authz.json')
    await writeFile(
      policyFile,
      JSON.stringify({
        version: '1.0',
        type: 'cedarv1',
        cedar: {policies: POLICIES, entities_json: '[]'},
      }),
    )
    // Per-subject groups/roles claims through oidc-provider's own extraTokenClaims hook.
    const claimsBySub: Record<string, Record<string, unknown>> = {
      alice: {groups: ['admins']},
      bob: {roles: ['operator']},
    }
    idp = await startOidcProvider({
      configure: (config) => {
        ;(config as {extraTokenClaims?: unknown}).extraTokenClaims = async (
          _ctx: unknown,
          token: {accountId?: string},
        ) => claimsBySub[token.accountId ?? '']
      },
    })
    everything = await startMcpUpstream('streamableHttp')
    jsonServer = await startJsonMcpServer()
    tokens.alice = await idp.issueAccessToken({sub: 'alice'})
    tokens.bob = await idp.issueAccessToken({sub: 'bob'})
    tokens.carol = await idp.issueAccessToken({sub: 'carol'})
    const common = {issuer: idp.issuer, audience: idp.audience, policyFile}
    proxy = await startProxyInProcess('everything', {target: everything.url, ...common})
    jsonProxy = await startProxyInProcess('json-server', {target: jsonServer.url, ...common})
  })

  after(async () => {
    for (const c of clients) await c.close().catch(() => undefined)
    await proxy?.stop()
    await jsonProxy?.stop()
    await everything?.stop()
    await new Promise((r) => jsonServer?.server.close(r))
    jsonServer?.server.closeAllConnections()
    await idp?.close()
    await rm(dir, {recursive: true, force: true})
  })

  async function connect(who: keyof typeof tokens, url = proxy.url) {
    const c = await mcpClient(url, tokens[who])
    clients.push(c.client)
    return c
  }

  it('a read-only tool is allowed through a group before any tools/list (annotations fetched from the server)', async () => {
    const {client} = await connect('alice')
    const result = await client.callTool({name: 'get-tiny-image', arguments: {}})
    assert.ok(Array.isArray(result.content))
  })

  it('answers 401 without a token before any authorization', async () => {
    const r = await post(proxy.url, rpc(1, 'tools/call', {name: 'get-env'}))
    assert.equal(r.status, 401)
  })

  it('denies with the exact JSON-RPC 403 body', async () => {
    const r = await post(proxy.url, rpc(7, 'tools/call', {name: 'get-env', arguments: {}}), {
      authorization: `Bearer ${tokens.alice}`,
    })
    assert.equal(r.status, 403)
    assert.equal(r.text, '{"jsonrpc":"2.0","id":7,"error":{"code":403,"message":"Unauthorized"}}')
    const notification = await post(proxy.url, rpc(undefined, 'tools/call', {name: 'get-env'}), {
      authorization: `Bearer ${tokens.alice}`,
    })
    assert.equal(notification.status, 403)
    assert.equal(
      notification.text,
      '{"jsonrpc":"2.0","error":{"code":403,"message":"Unauthorized"}}',
    )
  })

  const calls: [keyof typeof tokens, string, Record<string, unknown>, boolean][] = [
    ['alice', 'echo', {message: 'hi'}, true],
    ['bob', 'echo', {message: 'hi'}, true],
    ['carol', 'echo', {message: 'hi'}, true],
    ['alice', 'get-sum', {a: 1, b: 2}, true],
    ['bob', 'get-sum', {a: 1, b: 2}, false],
    ['alice', 'get-env', {}, false], // forbid beats the group permit
    ['alice', 'toggle-simulated-logging', {}, false], // not read-only, alice is no operator
    ['bob', 'toggle-simulated-logging', {}, true], // role via claim_roles
    ['bob', 'get-tiny-image', {}, false], // bob is not in admins
    ['carol', 'get-sum', {a: 1, b: 2}, false],
  ]
  for (const [who, tool, args, allowed] of calls) {
    it(`${allowed ? 'allows' : 'denies'} ${who} calling ${tool}`, async () => {
      const {client} = await connect(who)
      if (allowed) {
        const result = await client.callTool({name: tool, arguments: args})
        assert.notEqual(result.isError, true)
      } else {
        await assert.rejects(client.callTool({name: tool, arguments: args}), /403|Unauthorized/)
      }
    })
  }

  it('filters tools/list in an SSE response to what the caller may call', async () => {
    const alice = await connect('alice')
    const names = (await alice.client.listTools()).tools.map((t) => t.name).sort()
    assert.deepEqual(names, [
      'echo',
      'get-annotated-message',
      'get-resource-links',
      'get-resource-reference',
      'get-structured-content',
      'get-sum',
      'get-tiny-image',
      'trigger-long-running-operation',
    ])
    const bob = await connect('bob')
    assert.deepEqual((await bob.client.listTools()).tools.map((t) => t.name).sort(), [
      'echo',
      'toggle-simulated-logging',
    ])
  })

  it('the raw SSE list answer keeps the event framing', async () => {
    const {transport} = await connect('carol')
    const r = await post(proxy.url, rpc('list-1', 'tools/list'), {
      authorization: `Bearer ${tokens.carol}`,
      'mcp-session-id': transport.sessionId ?? '',
    })
    assert.equal(r.status, 200)
    assert.match(r.type ?? '', /text\/event-stream/)
    const data = r.text.split('\n').find((l) => l.startsWith('data: '))
    assert.ok(data, r.text)
    const message = JSON.parse(data.slice(6)) as {id: string; result: {tools: {name: string}[]}}
    assert.equal(message.id, 'list-1')
    assert.deepEqual(
      message.result.tools.map((t) => t.name),
      ['echo'],
    )
  })

  it('filters prompts/list and resources/list, and decides prompts/get and resources/read', async () => {
    const {client} = await connect('carol')
    assert.deepEqual(
      (await client.listPrompts()).prompts.map((p) => p.name),
      ['simple-prompt'],
    )
    assert.deepEqual(
      (await client.listResources()).resources.map((r) => r.uri),
      ['demo://resource/static/document/architecture.md'],
    )
    await client.getPrompt({name: 'simple-prompt'})
    await assert.rejects(
      client.getPrompt({name: 'args-prompt', arguments: {city: 'x'}}),
      /403|Unauthorized/,
    )
    await client.readResource({uri: 'demo://resource/static/document/architecture.md'})
    await assert.rejects(
      client.readResource({uri: 'demo://resource/static/document/extension.md'}),
      /403|Unauthorized/,
    )
  })

  it('fake annotations sent by a client cannot change the decision', async () => {
    const {transport} = await connect('alice')
    const headers = {
      authorization: `Bearer ${tokens.alice}`,
      'mcp-session-id': transport.sessionId ?? '',
    }
    const spoofed = await post(
      proxy.url,
      rpc(9, 'tools/call', {
        name: 'toggle-simulated-logging',
        arguments: {},
        annotations: {readOnlyHint: true},
        _meta: {annotations: {readOnlyHint: true}},
      }),
      headers,
    )
    assert.equal(spoofed.status, 403)
    // Control: in the same session a truly read-only tool passes.
    const control = await post(
      proxy.url,
      rpc(10, 'tools/call', {name: 'get-tiny-image', arguments: {}}),
      headers,
    )
    assert.equal(control.status, 200)
  })

  for (const method of [
    'sampling/createMessage',
    'elicitation/create',
    'tasks/get',
    'tasks/list',
    'tools/delete',
    'Tools/List',
  ]) {
    it(`denies the method ${method}`, async () => {
      const r = await post(proxy.url, rpc(3, method, {}), {authorization: `Bearer ${tokens.alice}`})
      assert.equal(r.status, 403)
      assert.equal(r.text, '{"jsonrpc":"2.0","id":3,"error":{"code":403,"message":"Unauthorized"}}')
    })
  }

  it('answers 400 to a non-JSON POST and to a batch', async () => {
    const auth = {authorization: `Bearer ${tokens.alice}`}
    assert.equal((await post(proxy.url, 'not json', auth)).status, 400)
    assert.equal((await post(proxy.url, `[${rpc(1, 'ping')}]`, auth)).status, 400)
  })

  it('filters tools/list in a JSON response', async () => {
    const raw = await post(jsonProxy.url, rpc(5, 'tools/list'), {
      authorization: `Bearer ${tokens.alice}`,
    })
    assert.equal(raw.status, 200)
    assert.match(raw.type ?? '', /application\/json/)
    const body = JSON.parse(raw.text) as {id: number; result: {tools: {name: string}[]}}
    assert.equal(body.id, 5)
    assert.deepEqual(body.result.tools.map((t) => t.name).sort(), ['echo', 'safe-read'])
    const {client} = await connect('carol', jsonProxy.url)
    assert.deepEqual(
      (await client.listTools()).tools.map((t) => t.name),
      ['echo'],
    )
    await assert.rejects(client.callTool({name: 'wipe', arguments: {}}), /403|Unauthorized/)
  })

  // A hand-written upstream: no real MCP server here compresses its answers, but servers behind
  // compression middleware do, whatever accept-encoding they are sent.
  for (const [label, type, frame] of [
    ['JSON', 'application/json', (s: string) => s],
    ['SSE', 'text/event-stream', (s: string) => `event: message\ndata: ${s}\n\n`],
    ['octet-stream', 'application/octet-stream', (s: string) => s],
  ] as const) {
    it(`never passes a gzip-compressed ${label} tools/list answer through unfiltered`, async () => {
      const gz = createServer((req, res) => {
        let body = ''
        req.on('data', (d: Buffer) => (body += d.toString()))
        req.on('end', () => {
          const id = (JSON.parse(body) as {id: number}).id
          const list = {
            jsonrpc: '2.0',
            id,
            result: {tools: [{name: 'echo'}, {name: 'secret-admin-tool'}]},
          }
          res.writeHead(200, {'content-type': type, 'content-encoding': 'gzip'})
          res.end(gzipSync(frame(JSON.stringify(list))))
        })
      })
      await new Promise<void>((resolve) => gz.listen(0, '127.0.0.1', resolve))
      const policyFile = join(dir, 'authz.json')
      const gzProxy = await startProxyInProcess('gzip-server', {
        target: `http://127.0.0.1:${(gz.address() as {port: number}).port}`,
        issuer: idp.issuer,
        audience: idp.audience,
        policyFile,
      })
      try {
        // node:http does not decompress: these are the bytes the client gets.
        const raw = await new Promise<Buffer>((resolve, reject) => {
          const req = httpRequest(
            gzProxy.url + '/mcp',
            {
              method: 'POST',
              headers: {
                'content-type': 'application/json',
                accept: 'application/json, text/event-stream',
                'accept-encoding': 'gzip',
                authorization: `Bearer ${tokens.carol}`,
              },
              timeout: 30_000,
            },
            (res) => {
              const chunks: Buffer[] = []
              res.on('data', (c: Buffer) => chunks.push(c))
              res.on('end', () => resolve(Buffer.concat(chunks)))
              res.on('error', reject)
            },
          )
          req.on('error', reject)
          req.end(rpc(41, 'tools/list'))
        })
        let text = raw.toString('latin1')
        try {
          text += gunzipSync(raw).toString('utf8')
        } catch {
          // not gzip: the proxy replaced the body
        }
        assert.doesNotMatch(text, /secret-admin-tool/)
        assert.match(raw.toString('utf8'), /"id":41,"error":\{"code":-32603/)
        assert.match(gzProxy.stderr(), /authz refused an upstream list response/)
      } finally {
        await gzProxy.stop()
        await new Promise((r) => gz.close(r))
        gz.closeAllConnections()
      }
    })
  }

  it('logs decisions with principal, action, resource and policy, never the token', () => {
    const log = proxy.stderr() + jsonProxy.stderr()
    assert.match(
      log,
      /authz decision.*principal=.*alice.*action=.*call_tool.*resource=.*get-env.*decision=deny.*policies=policy4/,
    )
    assert.match(log, /authz decision.*decision=allow.*policies=policy0/)
    for (const t of Object.values(tokens))
      assert.ok(!log.includes(t), 'a token appeared in the log')
    assert.ok(
      !log.includes(tokens.alice.split('.')[1] as string),
      'a token payload appeared in the log',
    )
  })
})

describe('toolgate proxy --authz-config (the CLI process)', () => {
  let dir: string
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolgate-authz-cli-'))
  })
  after(async () => {
    await rm(dir, {recursive: true, force: true})
  })

  it('refuses to start on a policy that does not parse, naming its index and the parser message', async () => {
    const file = join(dir, 'bad.yaml')
    await writeFile(
      file,
      [
        'version: "1.0"',
        'type: cedarv1',
        'cedar:',
        '  policies:',
        `    - '${POLICIES[0]}'`,
        "    - 'permit(principal, action'",
      ].join('\n'),
    )
    const child = spawn(
      process.execPath,
      [
        'bin/dev.js',
        'proxy',
        '--target-uri',
        'http://127.0.0.1:9',
        '--oidc-issuer',
        'http://127.0.0.1:9',
        '--authz-config',
        file,
        'x',
      ],
      {stdio: ['ignore', 'pipe', 'pipe']},
    )
    let stdout = ''
    let stderr = ''
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    clearTimeout(timer)
    assert.equal(code, 78, stderr)
    assert.match(stderr, /cedar\.policies\[1\]: policy 1 does not parse: .*unexpected end of input/)
    assert.doesNotMatch(stdout, /listening/)
  })

  // Without incoming authentication every request is anonymous: the proxy would only ever answer 403.
  for (const auth of [
    [],
    ['--oidc-audience', 'api://x'],
    ['--oidc-client-id', 'c', '--oidc-client-secret', 's'],
  ]) {
    it(`refuses --authz-config without incoming authentication${auth.length ? ` (only ${auth.filter((a) => a.startsWith('--')).join(' ')})` : ''}: exit 2 naming the flags to add`, async () => {
      const file = join(dir, 'noauth.json')
      await writeFile(
        file,
        JSON.stringify({version: '1.0', type: 'cedarv1', cedar: {policies: [POLICIES[0]]}}),
      )
      const child = spawn(
        process.execPath,
        [
          'bin/dev.js',
          'proxy',
          '--target-uri',
          'http://127.0.0.1:9',
          ...auth,
          '--authz-config',
          file,
          'x',
        ],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      )
      let stdout = ''
      let stderr = ''
      child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()))
      child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
      clearTimeout(timer)
      assert.equal(code, 2, stderr)
      assert.match(stderr, /--authz-config: authorization needs an authenticated principal/)
      assert.match(stderr, /--oidc-issuer/)
      assert.match(stderr, /--oidc-jwks-url/)
      assert.match(stderr, /--oidc-introspection-url/)
      assert.doesNotMatch(stdout, /listening/)
    })
  }

  it('refuses an unknown policy type', async () => {
    const file = join(dir, 'type.json')
    await writeFile(
      file,
      JSON.stringify({version: '1.0', type: 'opav1', cedar: {policies: [POLICIES[0]]}}),
    )
    const child = spawn(
      process.execPath,
      [
        'bin/dev.js',
        'proxy',
        '--target-uri',
        'http://127.0.0.1:9',
        '--oidc-issuer',
        'http://127.0.0.1:9',
        '--authz-config',
        file,
        'x',
      ],
      {stdio: ['ignore', 'ignore', 'pipe']},
    )
    let stderr = ''
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    clearTimeout(timer)
    assert.notEqual(code, 0)
    assert.match(stderr, /type: unknown policy type "opav1"/)
  })

  it('runs the policy in the CLI: 401 without a token before 403, then allowed and denied calls', async () => {
    const file = join(dir, 'ok.json')
    await writeFile(
      file,
      JSON.stringify({version: '1.0', type: 'cedarv1', cedar: {policies: POLICIES}}),
    )
    const idp = await startOidcProvider()
    const upstream = await startMcpUpstream('streamableHttp')
    let cli: ProxyProcess | undefined
    try {
      cli = await startProxyCli([
        '--target-uri',
        upstream.url,
        '--oidc-issuer',
        idp.issuer,
        '--oidc-audience',
        idp.audience,
        '--authz-config',
        file,
        '--json',
        'everything',
      ])
      assert.equal((await post(cli.url, rpc(1, 'tools/call', {name: 'get-env'}))).status, 401)
      const token = await idp.issueAccessToken({sub: 'carol'})
      const denied = await post(cli.url, rpc(2, 'tools/call', {name: 'get-env'}), {
        authorization: `Bearer ${token}`,
      })
      assert.equal(denied.status, 403, denied.text)
      assert.equal(
        denied.text,
        '{"jsonrpc":"2.0","id":2,"error":{"code":403,"message":"Unauthorized"}}',
      )
      const client = new Client({name: 'cli-test', version: '1.0.0'})
      await client.connect(
        new StreamableHTTPClientTransport(new URL(cli.url + '/mcp'), {
          requestInit: {headers: {authorization: `Bearer ${token}`}},
        }),
      )
      try {
        assert.deepEqual(
          (await client.listTools()).tools.map((t) => t.name),
          ['echo'],
        )
        const result = await client.callTool({name: 'echo', arguments: {message: 'cli'}})
        assert.deepEqual(result.content, [{type: 'text', text: 'Echo: cli'}])
      } finally {
        await client.close().catch(() => undefined)
      }
    } finally {
      await cli?.stop()
      await upstream.stop()
      await idp.close()
    }
  })
})
