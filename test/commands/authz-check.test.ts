/**
 * `authz check` against a running proxy: every row of the Cedar decision table
 * (test/lib/authz/decision-cases.ts) goes through both paths with the same inputs — the same
 * policy file, the same token (minted by a real oidc-provider and validated by each path), the
 * same JSON-RPC call, the same MCP server listing the tool's annotations — and the two must agree.
 * The proxy is built in-process exactly as `toolgate proxy --authz-config` builds it.
 */
import assert from 'node:assert/strict'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {createServer, type Server} from 'node:http'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {McpServer} from '@modelcontextprotocol/sdk/server/mcp.js'
import {StreamableHTTPServerTransport} from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import {providersFromOidcFlags} from '../../src/lib/auth/explain/index.ts'
import {createAuthenticator} from '../../src/lib/auth/index.ts'
import {checkRequest} from '../../src/lib/authz/check.ts'
import {callerFromToken, connectTarget} from '../../src/lib/authz/check-inputs.ts'
import {loadAuthzConfigFile, loadAuthzInterceptor} from '../../src/lib/authz/index.ts'
import type {ToolAnnotations} from '../../src/lib/authz/entity-model.ts'
import {createMemoryLogger} from '../../src/lib/log/logger.ts'
import {oauthConfigFromOidc} from '../../src/lib/proxy/incoming-auth.ts'
import {proxyConfigFromFlags} from '../../src/lib/proxy/options.ts'
import {startProxy} from '../../src/lib/proxy/proxy-server.ts'
import {startOidcProvider, type OidcProviderFixture} from '../helpers/oidc-provider.ts'
import {runCli} from '../helpers/proxy-run.ts'
import {cases, type Case} from '../lib/authz/decision-cases.ts'

const AUD = 'api://tools'
let idp: OidcProviderFixture
let dir: string
let upstream: Server
let upstreamUrl: string
/** The tool the MCP server lists for the current row, with the row's annotations. */
let listed: {name: string; annotations: ToolAnnotations | undefined} = {
  name: 'echo',
  annotations: undefined,
}

before(async () => {
  idp = await startOidcProvider({audience: AUD})
  dir = await mkdtemp(join(tmpdir(), 'tg-authz-check-'))
  // The MCP SDK's own server (stateless, JSON responses), rebuilt per request from `listed`.
  upstream = createServer(async (req, res) => {
    const mcp = new McpServer({name: 'check-upstream', version: '1.0.0'})
    mcp.registerTool(
      listed.name,
      {
        description: 'the row tool',
        ...(listed.annotations ? {annotations: listed.annotations} : {}),
      },
      async () => ({content: [{type: 'text', text: 'called'}]}),
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
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r))
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as {port: number}).port}`
})

after(async () => {
  upstream?.close()
  await idp?.close()
  if (dir) await rm(dir, {recursive: true, force: true})
})

const METHOD = {
  call_tool: 'tools/call',
  get_prompt: 'prompts/get',
  read_resource: 'resources/read',
} as const

function requestOf(c: Case): {method: string; params: Record<string, unknown>} {
  const action = c.action ?? 'call_tool'
  const id = c.id ?? 'echo'
  const params: Record<string, unknown> =
    action === 'read_resource' ? {uri: id} : {name: id, ...(c.args ? {arguments: c.args} : {})}
  return {method: METHOD[action], params}
}

async function policyFile(c: Case, i: number): Promise<string> {
  const file = join(dir, `policy-${i}.json`)
  await writeFile(
    file,
    JSON.stringify({
      version: '1.0',
      type: 'cedarv1',
      cedar: {
        policies: c.policies,
        entities_json: JSON.stringify(c.entities ?? []),
        group_claim_name: c.groupClaim ?? '',
        role_claim_name: c.roleClaim ?? '',
      },
    }),
  )
  return file
}

async function throughProxy(file: string, token: string, body: string): Promise<number> {
  const logger = createMemoryLogger('debug')
  const config = proxyConfigFromFlags(
    'check',
    {
      'target-uri': upstreamUrl,
      host: '127.0.0.1',
      'max-request-body-size': 0,
      'oidc-issuer': idp.issuer,
      'oidc-audience': AUD,
    },
    {logger},
  )
  config.interceptor = await loadAuthzInterceptor(file, {logger})
  const running = await startProxy(config, {
    logger,
    authenticator: createAuthenticator(oauthConfigFromOidc(config.oidc!, config.resourceUrl), {
      logger,
    }),
  })
  try {
    const res = await fetch(running.url + '/mcp', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
      },
      body,
      signal: AbortSignal.timeout(30_000),
    })
    await res.text()
    return res.status
  } finally {
    await running.close()
  }
}

describe('authz check agrees with the running proxy on every row of the decision table', () => {
  const source = () => providersFromOidcFlags({issuer: idp.issuer, audience: AUD, scopes: []})
  cases.forEach((c, i) => {
    it(`${c.allow ? 'allows' : 'denies'}: ${c.name}`, async () => {
      const sub = c.sub ?? 'alice'
      const now = Math.floor(Date.now() / 1000)
      const token = await idp.signJwt({iss: idp.issuer, aud: AUD, exp: now + 600, sub, ...c.claims})
      const file = await policyFile(c, i)
      const {method, params} = requestOf(c)
      listed = {name: String(params.name ?? 'echo'), annotations: c.annotations}
      const status = await throughProxy(
        file,
        token,
        JSON.stringify({jsonrpc: '2.0', id: 1, method, params}),
      )
      assert.ok(status === 200 || status === 403, `proxy answered ${status}`)

      const s = source()
      const caller = await callerFromToken(token, s.oauth, s.configPath, createMemoryLogger())
      const target = await connectTarget(upstreamUrl + '/mcp')
      let result
      try {
        result = await checkRequest({
          config: await loadAuthzConfigFile(file),
          ...caller,
          method,
          params,
          fetchAnnotations: (tool) => target.annotations(tool),
        })
      } finally {
        await target.close()
      }
      assert.equal(
        result.decision === 'allow',
        status === 200,
        `check ${result.decision}, proxy ${status}: ${result.reason}`,
      )
      assert.equal(result.decision === 'allow', c.allow)
      // The deciding policies are named: an allow by its permits, a deny by forbids or errors.
      if (result.decision === 'allow')
        assert.ok(result.policies.length > 0 && result.policies.every((p) => p.effect === 'permit'))
      else if (result.errors.length > 0)
        assert.deepEqual(
          result.policies.map((p) => p.id),
          result.errors.map((e) => e.id),
        )
      else assert.ok(result.policies.every((p) => p.effect === 'forbid'))
      for (const e of result.errors) assert.ok(e.message.length > 0 && /^policy\d+$/.test(e.id))
      // Rows about forbid name the forbid that decided.
      if (/forbid beats permit/.test(c.name))
        assert.deepEqual(
          result.policies.map((p) => p.id),
          ['policy1'],
        )
    })
  })
})

describe('authz check names policies, errors and list results', () => {
  const POLICIES = [
    '@id("echo-for-all") permit(principal, action == Action::"call_tool", resource == Tool::"echo");',
    'forbid(principal == Client::"bob", action, resource);',
    'permit(principal, action, resource) when { principal.claim_level > 3 };',
  ]
  let file: string
  before(async () => {
    file = join(dir, 'named.yaml')
    await writeFile(
      file,
      `version: '1.0'\ntype: cedarv1\ncedar:\n  policies:\n${POLICIES.map((p) => `    - '${p}'`).join('\n')}\n`,
    )
  })
  const check = async (
    sub: string,
    claims: Record<string, unknown>,
    method: string,
    params: unknown,
    listResult?: unknown,
  ) =>
    checkRequest({
      config: await loadAuthzConfigFile(file),
      subject: sub,
      claims: {sub, ...claims},
      method,
      params,
      ...(listResult ? {listResult: async () => listResult} : {}),
    })

  it('names a permit by index and @id, a forbid by index, and an erroring policy with its message', async () => {
    const allowed = await check('alice', {level: 5}, 'tools/call', {name: 'echo'})
    assert.deepEqual(allowed.policies, [
      {id: 'policy0', name: 'echo-for-all', effect: 'permit'},
      {id: 'policy2', name: null, effect: 'permit'},
    ])
    const forbidden = await check('bob', {level: 5}, 'tools/call', {name: 'echo'})
    assert.equal(forbidden.decision, 'deny')
    assert.deepEqual(
      forbidden.policies.map((p) => [p.id, p.effect]),
      [['policy1', 'forbid']],
    )
    const errored = await check('alice', {}, 'tools/call', {name: 'echo'})
    assert.equal(errored.decision, 'deny')
    assert.deepEqual(
      errored.errors.map((e) => e.id),
      ['policy2'],
    )
    assert.match(errored.errors[0]?.message ?? '', /claim_level/)
    assert.ok(errored.request && errored.request.principal.id === 'alice')
  })

  it('applies the method table: always-allowed, unknown and malformed calls', async () => {
    assert.equal((await check('alice', {}, 'ping', {})).decision, 'allow')
    const sampling = await check('alice', {}, 'sampling/createMessage', {})
    assert.deepEqual([sampling.decision, sampling.reason], ['deny', 'method not allowed'])
    const bad = await check('alice', {}, 'tools/call', {name: 42})
    assert.deepEqual(
      [bad.decision, bad.reason],
      ['deny', 'invalid params.name or params.arguments'],
    )
  })

  it('filters a list response to what the caller would see', async () => {
    const list = {
      jsonrpc: '2.0',
      id: 1,
      result: {tools: [{name: 'echo'}, {name: 'wipe'}], nextCursor: 'n'},
    }
    const bob = await check('bob', {}, 'tools/list', {}, list)
    assert.deepEqual(bob.list, {kind: 'tools', total: 2, kept: [], removed: ['echo', 'wipe']})
    const alice = await check('alice', {level: 1}, 'tools/list', {}, list)
    assert.deepEqual(alice.list?.kept, ['echo'])
  })

  it('the command: exit 0 on allow, 1 on deny, 2 on bad input naming the flag', async () => {
    const claims = join(dir, 'claims.json')
    await writeFile(claims, JSON.stringify({sub: 'alice', level: 1}))
    const home = join(dir, 'home')
    const cli = async (argv: string[]) => {
      const run = runCli(
        ['authz', 'check', '--authz-config', file, '--claims', claims, ...argv],
        home,
      )
      return {code: await run.exited, out: run.stdout(), err: run.stderr()}
    }
    const ok = await cli([
      '--method',
      'tools/call',
      '--params',
      '{"name":"echo"}',
      '--json',
      '--show-request',
    ])
    assert.equal(ok.code, 0, ok.err)
    const json = JSON.parse(ok.out) as {decision: string; request: {entities: unknown[]}}
    assert.equal(json.decision, 'allow')
    assert.ok(json.request.entities.length >= 2)
    const denied = await cli(['--method', 'prompts/get', '--params', '{"name":"x"}'])
    assert.equal(denied.code, 1, denied.err)
    assert.match(denied.out, /^DENY prompts\/get: denied: no permit applies \(default deny\)/)
    const bad = await cli(['--method', 'tools/call', '--params', '{"name":'])
    assert.equal(bad.code, 2)
    assert.match(bad.err, /--params: not JSON/)
    const ann = await cli([
      '--method',
      'tools/call',
      '--params',
      '{"name":"echo"}',
      '--annotations',
      '{"readOnly":true}',
    ])
    assert.equal(ann.code, 2)
    assert.match(ann.err, /--annotations: unknown annotation "readOnly"/)
  })
})
