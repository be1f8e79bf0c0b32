import assert from 'node:assert/strict'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {
  freePort,
  startMcpUpstream,
  startRecordingUpstream,
  type McpUpstream,
  type RecordingUpstream,
} from '../helpers/mcp-upstream.ts'
import {startOidcProvider, type OidcProviderFixture} from '../helpers/oidc-provider.ts'
import {runCli} from '../helpers/proxy-run.ts'
import {EVERYTHING, mcpClient, runForeground, textOf} from '../helpers/workload.ts'

/**
 * A workload is a proxy whose upstream toolgate started: incoming OIDC and Cedar apply to it
 * exactly as to `toolgate proxy` (a real oidc-provider), servers that listen themselves are fronted
 * with --transport streamable-http, and remote servers with --url and outgoing credentials.
 */
describe('toolgate run: incoming OIDC and Cedar on a stdio workload', () => {
  let home: string
  let idp: OidcProviderFixture
  let workload: Awaited<ReturnType<typeof runForeground>>

  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'toolgate-run-auth-'))
    idp = await startOidcProvider()
    const policy = join(home, 'authz.yaml')
    await writeFile(
      policy,
      [
        'version: "1.0"',
        'type: cedarv1',
        'cedar:',
        '  entities_json: "[]"',
        '  policies:',
        `    - 'permit(principal, action == Action::"call_tool", resource == Tool::"echo");'`,
        `    - 'permit(principal == Client::"alice", action == Action::"call_tool", resource == Tool::"get-sum");'`,
      ].join('\n'),
    )
    workload = await runForeground(
      'guarded',
      ['--oidc-issuer', idp.issuer, '--oidc-audience', idp.audience, '--authz-config', policy],
      EVERYTHING,
      home,
    )
  })

  after(async () => {
    await workload?.stop()
    await idp?.close()
    await rm(home, {recursive: true, force: true})
  })

  it('answers 401 with a challenge to a request without a token', async () => {
    const res = await fetch(workload.url, {
      method: 'POST',
      headers: {'content-type': 'application/json', accept: 'application/json, text/event-stream'},
      body: JSON.stringify({jsonrpc: '2.0', id: 1, method: 'initialize', params: {}}),
    })
    assert.equal(res.status, 401)
    assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/)
  })

  it('lets each caller do what the policy allows, and filters tools/list', async () => {
    const alice = await mcpClient(workload.url, {token: await idp.issueAccessToken({sub: 'alice'})})
    const bob = await mcpClient(workload.url, {token: await idp.issueAccessToken({sub: 'bob'})})
    try {
      assert.equal(
        textOf(await alice.callTool({name: 'get-sum', arguments: {a: 1, b: 2}})),
        'The sum of 1 and 2 is 3.',
      )
      assert.equal(
        textOf(await bob.callTool({name: 'echo', arguments: {message: 'ok'}})),
        'Echo: ok',
      )
      await assert.rejects(bob.callTool({name: 'get-sum', arguments: {a: 1, b: 2}}), /Unauthorized/)
      const names = (await bob.listTools()).tools.map((t) => t.name).sort()
      assert.deepEqual(names, ['echo'])
    } finally {
      await alice.close()
      await bob.close()
    }
  })
})

describe('toolgate run: servers that listen themselves, and remote servers', () => {
  let home: string
  let remote: McpUpstream
  let recorder: RecordingUpstream

  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'toolgate-run-http-'))
    remote = await startMcpUpstream('streamableHttp')
    recorder = await startRecordingUpstream()
  })
  after(async () => {
    await remote?.stop()
    await recorder?.close()
    await rm(home, {recursive: true, force: true})
  })

  it('--transport streamable-http starts the server with PORT and fronts it', async () => {
    const port = await freePort()
    const w = await runForeground(
      'web',
      ['--transport', 'streamable-http', '--target-port', String(port)],
      [EVERYTHING[0]!, EVERYTHING[1]!, 'streamableHttp'],
      home,
    )
    try {
      assert.notEqual(w.port, port, 'clients use the proxy port, not the server port')
      const c = await mcpClient(w.url)
      assert.equal(
        textOf(await c.callTool({name: 'echo', arguments: {message: 'web'}})),
        'Echo: web',
      )
      await c.close()
    } finally {
      await w.stop()
    }
  })

  it('--url fronts a remote server with the outgoing bearer token', async () => {
    const tokenFile = join(home, 'token')
    await writeFile(tokenFile, 'remote-bearer-123\n', {mode: 0o600})
    const w = await runForeground(
      'remote',
      ['--url', `${recorder.url}/api/mcp`, '--remote-auth-bearer-token-file', tokenFile],
      [],
      home,
    )
    try {
      assert.match(w.url, /\/api\/mcp$/)
      const res = await fetch(w.url, {
        method: 'POST',
        headers: {'content-type': 'application/json'},
        body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
      })
      assert.equal(res.status, 200)
      const seen = await recorder.waitForRequest(1)
      assert.equal(seen.url, '/api/mcp')
      assert.equal(seen.headers.authorization, 'Bearer remote-bearer-123')
    } finally {
      await w.stop()
    }
  })

  it('--url to a real MCP server works for an SDK client', async () => {
    const w = await runForeground('remote-mcp', ['--url', `${remote.url}/mcp`], [], home)
    try {
      const c = await mcpClient(w.url)
      assert.equal(
        textOf(await c.callTool({name: 'echo', arguments: {message: 'far'}})),
        'Echo: far',
      )
      await c.close()
    } finally {
      await w.stop()
    }
  })

  const usage: Array<[string, string[], RegExp]> = [
    ['no command and no --url', ['w'], /give the server command after --/],
    [
      'a command and --url',
      ['w', '--url', 'https://x.test/mcp', '--', 'node'],
      /either a server command after -- or --url/,
    ],
    [
      '--transport sse without --target-port',
      ['w', '--transport', 'sse', '--', 'node'],
      /give --target-port/,
    ],
    [
      '--target-port with stdio',
      ['w', '--target-port', '3000', '--', 'node'],
      /only for --transport streamable-http or sse/,
    ],
    ['a bad name', ['../etc', '--', 'node'], /workload name "..\/etc"/],
    ['a bad -e', ['w', '-e', '1X=2', '--', 'node'], /not an environment variable name/],
    [
      'a bad --secret',
      ['w', '--secret', 'nope', '--', 'node'],
      /must be <secret-name>,target=<ENV_VARIABLE>/,
    ],
    [
      'a bad --restart',
      ['w', '--restart', 'always', '--', 'node'],
      /--restart: "always" is not a policy/,
    ],
    [
      'a duration without a unit',
      ['w', '--request-timeout', '5', '--', 'node'],
      /--request-timeout: "5" is not a duration/,
    ],
  ]
  for (const [what, args, pattern] of usage) {
    it(`refuses ${what} (exit 2) before starting anything`, async () => {
      const r = runCli(['run', ...args], home)
      assert.equal(await r.exited, 2)
      assert.match(r.stderr(), pattern)
    })
  }
})
