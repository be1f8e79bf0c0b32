/**
 * `toolgate gateway` (issue 37) with three real backends behind one endpoint: server-everything
 * over stdio as a workload (`ev`), server-everything over streamable HTTP (`web`), and a remote
 * behind `toolgate proxy` that demands a bearer token (`remote`, the token from the gateway's
 * config). Incoming OIDC (a real oidc-provider) and one Cedar policy on the gateway; the MCP SDK
 * client drives it.
 */
import assert from 'node:assert/strict'
import {execFile} from 'node:child_process'
import {existsSync} from 'node:fs'
import {chmod, mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'
import {after, before, describe, it} from 'node:test'
import type {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {
  CreateMessageRequestSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js'
import {clientEnv, CLIENT_BIN} from '../helpers/client-env.ts'
import {needs} from '../helpers/component.ts'
import {freePort, startMcpUpstream, type McpUpstream} from '../helpers/mcp-upstream.ts'
import {startOidcProvider, type OidcProviderFixture} from '../helpers/oidc-provider.ts'
import {runCli, runProxy, stop, waitFor, type Run} from '../helpers/proxy-run.ts'
import {allFiles, EVERYTHING, mcpClient, textOf} from '../helpers/workload.ts'

describe('toolgate gateway: three real backends behind one endpoint, one login, one policy', () => {
  let home: string
  let idp: OidcProviderFixture
  let web: McpUpstream
  let remoteProxy: Run
  let gatewayUrl: string
  const clients: Client[] = []

  async function toolgate(argv: string[]): Promise<string> {
    const run = runCli(argv, home)
    const code = await run.exited
    assert.equal(code, 0, `toolgate ${argv.join(' ')}: ${run.stderr()}`)
    return run.stdout()
  }
  async function connect(sub: string, capabilities = {}): Promise<Client> {
    const client = await mcpClient(gatewayUrl, {
      token: await idp.issueAccessToken({sub}),
      capabilities,
    })
    clients.push(client)
    return client
  }
  const names = async (client: Client) => (await client.listTools()).tools.map((t) => t.name)

  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'toolgate-gateway-'))
    idp = await startOidcProvider()
    web = await startMcpUpstream('streamableHttp')
    // The remote: the same kind of server, reachable only with a token the idp issued.
    const remotePort = await freePort()
    remoteProxy = runProxy(
      [
        '--target-uri',
        web.url,
        '--oidc-issuer',
        idp.issuer,
        '--oidc-audience',
        idp.audience,
        '--port',
        String(remotePort),
        '--json',
        'remote',
      ],
      home,
    )
    await waitFor(
      'the remote proxy',
      () => (remoteProxy.stdout().includes('listening') ? true : undefined),
      remoteProxy,
    )
    const tokenFile = join(home, 'remote.token')
    await writeFile(tokenFile, await idp.issueAccessToken({sub: 'gateway-service'}))
    await chmod(tokenFile, 0o600)
    await writeFile(
      join(home, 'gateway.yaml'),
      [
        'backends:',
        '  ev:',
        '    tools:',
        '      deny: ["toggle-*"]',
        '      override:',
        '        echo: {name: say, description: Says it back}',
        '  remote:',
        `    url: http://127.0.0.1:${remotePort}/mcp`,
        '    auth:',
        '      remote-auth-bearer-token-file: remote.token',
        '    tools:',
        '      allow: ["echo", "get-sum", "trigger-*"]',
      ].join('\n'),
    )
    await writeFile(
      join(home, 'policy.yaml'),
      [
        'version: "1.0"',
        'type: cedarv1',
        'cedar:',
        '  entities_json: "[]"',
        '  policies:',
        `    - 'permit(principal, action, resource);'`,
        `    - 'forbid(principal, action, resource) when { resource has backend && resource.backend == "remote" } unless { principal == Client::"admin" };'`,
      ].join('\n'),
    )
    await toolgate([
      'run',
      'ev',
      '-e',
      'GATEWAY_TEST_WHO=stdio-workload',
      '--audit-log',
      join(home, 'ev-audit.log'),
      '--',
      ...EVERYTHING,
    ])
    const out = await toolgate([
      'gateway',
      'gw',
      '--json',
      '--backend',
      'ev',
      '--backend',
      `${web.url}/mcp=web`,
      '--config',
      join(home, 'gateway.yaml'),
      '--oidc-issuer',
      idp.issuer,
      '--oidc-audience',
      idp.audience,
      '--authz-config',
      join(home, 'policy.yaml'),
    ])
    const started = JSON.parse(out.trim().split('\n').pop()!) as {url: string; backends: string[]}
    assert.deepEqual(started.backends, ['ev', 'web', 'remote'])
    gatewayUrl = started.url
  })

  after(async () => {
    for (const c of clients) await c.close().catch(() => undefined)
    await runCli(['stop', '--all'], home).exited
    if (remoteProxy) await stop(remoteProxy)
    await web?.stop()
    await idp?.close()
    await rm(home, {recursive: true, force: true})
  })

  it('keeps the remote backend token out of state files, logs and the process list', async () => {
    const token = (await readFile(join(home, 'remote.token'), 'utf8')).trim()
    for (const file of await allFiles(join(home, 'state')))
      assert.ok(!file.text.includes(token), `the token is in ${file.path}`)
    const ps = await readProcessList()
    assert.ok(
      ps.includes('gateway') || ps.includes('workload-child'),
      'the gateway process is listed',
    )
    assert.ok(!ps.includes(token), 'the token is in a process command line')
  })

  it('is a managed workload: list shows it with its transport', async () => {
    const listed = JSON.parse(await toolgate(['list', '--json'])) as {
      workloads: Array<{name: string; transport: string; status: string}>
    }
    const gw = listed.workloads.find((w) => w.name === 'gw')
    assert.equal(gw?.transport, 'gateway')
    assert.equal(gw?.status, 'running')
  })

  it('refuses a caller without a token, as every workload front does', async () => {
    const res = await fetch(gatewayUrl, {
      method: 'POST',
      headers: {'content-type': 'application/json', accept: 'application/json, text/event-stream'},
      body: JSON.stringify({jsonrpc: '2.0', id: 1, method: 'initialize', params: {}}),
    })
    assert.equal(res.status, 401)
  })

  it("merges every backend's tools, prompts and resources under their prefixes, shaped and filtered by Cedar", async () => {
    const admin = await connect('admin')
    const tools = (await admin.listTools()).tools
    const all = tools.map((t) => t.name)
    assert.ok(
      all.every((n) => /^(ev|web|remote)__/.test(n)),
      all.join(' '),
    )
    // One name, three backends: three tools, none hiding another.
    assert.ok(all.includes('web__echo') && all.includes('remote__echo') && all.includes('ev__say'))
    assert.ok(!all.includes('ev__echo'), 'renamed: the old name is gone')
    assert.equal(tools.find((t) => t.name === 'ev__say')?.description, 'Says it back')
    assert.ok(!all.some((n) => n.startsWith('ev__toggle-')), 'denied tools are not listed')
    assert.ok(all.includes('web__toggle-simulated-logging'), 'shaping is per backend')
    // remote and web are the same server: remote lists what its allow globs let through.
    const allowed = /^(echo|get-sum|trigger-.*)$/
    assert.deepEqual(
      all.filter((n) => n.startsWith('remote__')).map((n) => n.slice('remote__'.length)),
      all
        .filter((n) => n.startsWith('web__'))
        .map((n) => n.slice('web__'.length))
        .filter((n) => allowed.test(n)),
    )
    assert.ok(all.includes('remote__trigger-long-running-operation'))
    assert.deepEqual([...all].sort(), all, 'sorted by name')
    const prompts = (await admin.listPrompts()).prompts.map((p) => p.name)
    assert.ok(prompts.includes('ev__simple-prompt') && prompts.includes('remote__simple-prompt'))
    const templates = (await admin.listResourceTemplates()).resourceTemplates
    assert.ok(
      templates.length > 0 && templates.every((t) => /^(ev|web|remote)\+/.test(t.uriTemplate)),
    )
    const resources = (await admin.listResources()).resources
    const uri = resources.find((r) => r.uri.startsWith('web+'))!.uri
    const read = await admin.readResource({uri})
    assert.equal(read.contents[0]?.uri, uri, 'contents carry the prefixed URI')
    // Cedar: alice may not touch the remote backend; its tools are not even listed for her.
    const alice = await connect('alice')
    const hers = await names(alice)
    assert.ok(hers.length > 0 && !hers.some((n) => n.startsWith('remote__')), hers.join(' '))
  })

  it("routes calls by prefix under the backend's own name, and refuses what shaping filtered", async () => {
    const admin = await connect('admin')
    assert.equal(
      textOf(await admin.callTool({name: 'ev__say', arguments: {message: 'hi'}})),
      'Echo: hi',
    )
    assert.equal(
      textOf(await admin.callTool({name: 'remote__get-sum', arguments: {a: 2, b: 3}})),
      'The sum of 2 and 3 is 5.',
    )
    // The collision resolved: the same tool name reaches two different servers.
    const evEnv = textOf(await admin.callTool({name: 'ev__get-env', arguments: {}}))
    const webEnv = textOf(await admin.callTool({name: 'web__get-env', arguments: {}}))
    assert.match(evEnv, /GATEWAY_TEST_WHO/)
    assert.doesNotMatch(webEnv, /GATEWAY_TEST_WHO/)
    // What shaping removed does not exist: not callable under either name.
    for (const name of [
      'ev__echo',
      'ev__toggle-simulated-logging',
      'remote__get-env',
      'nope__echo',
      'echo',
    ])
      await assert.rejects(admin.callTool({name, arguments: {message: 'x'}}), /Unknown tool/, name)
    // The workload saw its own tool name, not the gateway's.
    const audit = await readFile(join(home, 'ev-audit.log'), 'utf8')
    assert.match(audit, /"name":"echo"/)
    assert.doesNotMatch(audit, /ev__/)
  })

  it('applies one Cedar policy across backends on resource.backend', async () => {
    const alice = await connect('alice')
    await assert.rejects(
      alice.callTool({name: 'remote__get-sum', arguments: {a: 1, b: 1}}),
      /Unauthorized/,
    )
    assert.equal(
      textOf(await alice.callTool({name: 'web__echo', arguments: {message: 'w'}})),
      'Echo: w',
    )
  })

  it("sends a backend's sampling request to the calling session only", async () => {
    const asked: string[] = []
    const answerAs = (who: string) => (client: Client) =>
      client.setRequestHandler(CreateMessageRequestSchema, async () => {
        asked.push(who)
        return {model: 'test', role: 'assistant', content: {type: 'text', text: `from ${who}`}}
      })
    const a = await connect('carol', {sampling: {}})
    const b = await connect('carol', {sampling: {}})
    answerAs('a')(a)
    answerAs('b')(b)
    for (const [client, who] of [
      [a, 'a'],
      [b, 'b'],
    ] as const) {
      const result = await client.callTool({
        name: 'ev__trigger-sampling-request',
        arguments: {prompt: 'hello', maxTokens: 10},
      })
      assert.match(JSON.stringify(result), new RegExp(`from ${who}`))
    }
    assert.deepEqual(asked, ['a', 'b'])
  })

  it('attack: another session answering a backend request it was not sent is ignored', async () => {
    const victim = await connect('carol', {sampling: {}})
    const intruder = await connect('carol', {sampling: {}})
    let forged = false
    victim.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      // The intruder guesses the ids this session was given, while the victim holds the request.
      for (let n = 1; n <= 5; n++)
        await intruder.transport!.send({
          jsonrpc: '2.0',
          id: `ev-${n}`,
          result: {model: 'evil', role: 'assistant', content: {type: 'text', text: 'forged'}},
        })
      forged = true
      assert.equal(request.method, 'sampling/createMessage')
      return {model: 'test', role: 'assistant', content: {type: 'text', text: 'genuine'}}
    })
    const result = JSON.stringify(
      await victim.callTool({
        name: 'ev__trigger-sampling-request',
        arguments: {prompt: 'hello', maxTokens: 10},
      }),
    )
    assert.ok(forged)
    assert.match(result, /genuine/)
    assert.doesNotMatch(result, /forged/)
  })

  it('attack: names in other spellings, and server-to-client methods, are refused', async () => {
    const admin = await connect('admin')
    // Refused by the gateway: no such prefix (prefixes are case-sensitive), no separator.
    for (const name of ['EV__say', 'ev_say', 'say', '__say'])
      await assert.rejects(admin.callTool({name, arguments: {message: 'x'}}), /Unknown tool/, name)
    // Passed on under the backend's own spelling, which the backend does not have either.
    for (const name of ['ev__SAY', 'ev__ say', 'web__../echo']) {
      const result = await admin.callTool({name, arguments: {message: 'x'}})
      assert.equal(result.isError, true, name)
      assert.match(textOf(result), /not found/i, name)
    }
    // A client has no business sending what only a server asks (contract §6): 403 from Cedar.
    await assert.rejects(
      admin.request(
        {method: 'sampling/createMessage', params: {messages: [], maxTokens: 1}},
        CreateMessageRequestSchema,
      ),
      /Unauthorized/,
    )
  })

  it('carries progress back and cancellation through to the backend', async () => {
    const admin = await connect('admin')
    const progress: number[] = []
    await admin.callTool(
      {name: 'ev__trigger-long-running-operation', arguments: {duration: 1, steps: 3}},
      undefined,
      {onprogress: (p) => progress.push(p.progress)},
    )
    assert.deepEqual(progress, [1, 2, 3])
    const controller = new AbortController()
    const started = admin.callTool(
      {name: 'ev__trigger-long-running-operation', arguments: {duration: 30, steps: 30}},
      undefined,
      {onprogress: () => controller.abort(), signal: controller.signal},
    )
    await assert.rejects(started, /abort/i)
    // The backend was told: its own audit trail has the cancellation, under its own request id.
    const deadline = Date.now() + 10_000
    let audit = ''
    while (Date.now() < deadline) {
      audit = await readFile(join(home, 'ev-audit.log'), 'utf8')
      if (audit.includes('notifications/cancelled')) break
      await sleep(100)
    }
    assert.match(audit, /notifications\/cancelled/)
    assert.equal(
      textOf(await admin.callTool({name: 'ev__say', arguments: {message: 'still'}})),
      'Echo: still',
    )
  })

  it('rejects a cursor it did not make, and pages with its own', async () => {
    const admin = await connect('admin')
    await assert.rejects(admin.listTools({cursor: 'not-ours'}), /invalid cursor/)
  })

  it('a backend that goes down leaves the lists (list_changed), the others keep working, and it comes back', async () => {
    const watcher = await connect('admin')
    let changed = 0
    watcher.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      changed++
    })
    assert.ok((await names(watcher)).includes('ev__say'))
    await toolgate(['stop', 'ev'])
    await waitUntil(() => changed > 0, 'list_changed after the backend stopped')
    const without = await names(watcher)
    assert.ok(!without.some((n) => n.startsWith('ev__')), without.join(' '))
    assert.ok(without.includes('web__echo'))
    await assert.rejects(
      watcher.callTool({name: 'ev__say', arguments: {message: 'x'}}),
      /backend "ev" is unavailable/,
    )
    assert.equal(
      textOf(await watcher.callTool({name: 'web__echo', arguments: {message: 'w'}})),
      'Echo: w',
    )
    const seen = changed
    await toolgate(['run', 'ev', '--', ...EVERYTHING])
    await waitUntil(() => changed > seen, 'list_changed after the backend came back')
    await waitUntil(async () => (await names(watcher)).includes('ev__say'), 'ev tools listed again')
    assert.equal(
      textOf(await watcher.callTool({name: 'ev__say', arguments: {message: 'back'}})),
      'Echo: back',
    )
  })
})

async function waitUntil(check: () => boolean | Promise<boolean>, what: string, ms = 20_000) {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await check()) return
    await sleep(100)
  }
  assert.fail(`timed out waiting for ${what}`)
}

const BIN = CLIENT_BIN
const claudeMissing = existsSync(join(BIN, 'claude')) ? false : 'claude is not installed (npm ci)'

describe('toolgate gateway: one client entry for every backend', () => {
  let home: string
  let web: McpUpstream
  let url: string
  const env = () => clientEnv(home)
  async function toolgate(argv: string[]): Promise<string> {
    const run = runCli(argv, home, env())
    assert.equal(await run.exited, 0, `toolgate ${argv.join(' ')}: ${run.stderr()}`)
    return run.stdout()
  }

  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'toolgate-gateway-clients-'))
    web = await startMcpUpstream('streamableHttp')
    await writeFile(join(home, 'gateway.yaml'), 'pageSize: 7\n')
    await toolgate(['run', 'ev', '--', ...EVERYTHING])
    const out = await toolgate([
      'gateway',
      'open',
      '--json',
      '--backend',
      'ev',
      '--backend',
      `${web.url}/mcp=web`,
      '--config',
      join(home, 'gateway.yaml'),
    ])
    url = (JSON.parse(out.trim().split('\n').pop()!) as {url: string}).url
  })

  after(async () => {
    await runCli(['stop', '--all'], home, env()).exited
    await web?.stop()
    await rm(home, {recursive: true, force: true})
  })

  it('pages the merged list with its own cursors: every tool of every backend once, in order', async () => {
    const direct = async (u: string) => {
      const c = await mcpClient(u)
      const n = (await c.listTools()).tools.length
      await c.close()
      return n
    }
    const ev = JSON.parse(await toolgate(['list', '--json'])) as {
      workloads: Array<{name: string; url: string}>
    }
    const expected =
      (await direct(ev.workloads.find((w) => w.name === 'ev')!.url)) +
      (await direct(`${web.url}/mcp`))
    const client = await mcpClient(url)
    try {
      const seen: string[] = []
      let cursor: string | undefined
      let pages = 0
      do {
        const page = await client.listTools(cursor ? {cursor} : {})
        assert.ok(page.tools.length <= 7)
        seen.push(...page.tools.map((t) => t.name))
        cursor = page.nextCursor
        pages++
      } while (cursor && pages < 100)
      assert.equal(seen.length, expected)
      assert.equal(new Set(seen).size, seen.length, 'no tool twice')
      assert.deepEqual([...seen].sort(), seen)
      assert.ok(pages >= Math.ceil(expected / 7))
    } finally {
      await client.close()
    }
  })

  it('warns about a workload backend that is not running, starts anyway, and logs as a gateway', async () => {
    const run = runCli(['gateway', 'lonely', '--backend', 'ghost'], home, env())
    assert.equal(await run.exited, 0, run.stderr())
    assert.match(
      run.stderr(),
      /Warning: workload ghost is not running; its tools join the gateway when it starts/,
    )
    // No server of its own: `logs` shows the gateway's log.
    assert.match(await toolgate(['logs', 'lonely']), /gateway ready .*backends=ghost/)
    await toolgate(['stop', 'lonely'])
  })

  it('runs in the foreground too, and stops on SIGTERM', async () => {
    const run = runCli(['gateway', 'fg', '--foreground', '--json', '--backend', 'ev'], home, env())
    const line = await waitFor(
      'the running event',
      () =>
        run
          .stdout()
          .split('\n')
          .find((l) => l.includes('"running"')),
      run,
    )
    const client = await mcpClient((JSON.parse(line) as {url: string}).url)
    assert.ok((await client.listTools()).tools.some((t) => t.name === 'ev__echo'))
    await client.close()
    run.child.kill('SIGTERM')
    assert.equal(await run.exited, 0, run.stderr())
    const listed = JSON.parse(await toolgate(['list', '--all', '--json'])) as {
      workloads: Array<{name: string; status: string}>
    }
    assert.equal(listed.workloads.find((w) => w.name === 'fg')?.status, 'stopped')
  })

  it('refuses a bad backend before anything starts, and leaves no workload behind', async () => {
    const run = runCli(['gateway', 'bad', '--backend', 'https://x.example/mcp'], home, env())
    assert.equal(await run.exited, 2)
    assert.match(run.stderr(), /a URL backend needs a prefix/)
    const listed = JSON.parse(await toolgate(['list', '--all', '--json'])) as {
      workloads: Array<{name: string}>
    }
    assert.ok(!listed.workloads.some((w) => w.name === 'bad'))
  })

  it(
    'client add gives Claude Code the gateway as one server, and it connects',
    {skip: needs('claude (npm dev dependency)', claudeMissing)},
    async () => {
      const added = await toolgate(['client', 'add', 'open', '--client', 'claude-code'])
      assert.match(added, /Claude Code: added "open" \(http\)/)
      const out = await new Promise<string>((done, fail) =>
        execFile(
          join(BIN, 'claude'),
          ['mcp', 'list'],
          {cwd: home, env: env(), timeout: 90_000},
          (err, stdout, stderr) =>
            err ? fail(new Error(`${err.message}\n${stdout}\n${stderr}`)) : done(stdout + stderr),
        ),
      )
      assert.match(out, /^\W*open: .*Connected\s*$/m, out)
    },
  )
})

/** Every process's command line (Linux /proc), to prove a secret is in none of them. */
async function readProcessList(): Promise<string> {
  const {readdir} = await import('node:fs/promises')
  const lines: string[] = []
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')
    lines.push(cmd.replaceAll('\0', ' '))
  }
  return lines.join('\n')
}
