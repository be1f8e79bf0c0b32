import assert from 'node:assert/strict'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {createServer, type IncomingMessage, type Server} from 'node:http'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {gzipSync} from 'node:zlib'
import {after, before, describe, it} from 'node:test'
import {createAuthenticator} from '../../../src/lib/auth/index.ts'
import {loadAuthzInterceptor} from '../../../src/lib/authz/index.ts'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {oauthConfigFromOidc} from '../../../src/lib/proxy/incoming-auth.ts'
import {proxyConfigFromFlags} from '../../../src/lib/proxy/options.ts'
import {startProxy, type RunningProxy} from '../../../src/lib/proxy/proxy-server.ts'
import {startOidcProvider, type OidcProviderFixture} from '../../helpers/oidc-provider.ts'

/**
 * The proxy's side of the interceptor seam with the real Cedar interceptor (src/lib/authz) and a
 * real oidc-provider: what the target is asked for and what the client gets back. The targets are
 * hand-written HTTP servers because the behaviours under test (compression middleware, a target
 * that checks the passed-through bearer) are not something the reference MCP servers do.
 */

const POLICIES = [
  'permit(principal, action == Action::"call_tool", resource) when { resource has readOnlyHint && resource.readOnlyHint };',
]

const TOOLS = [
  {name: 'echo', inputSchema: {type: 'object'}, annotations: {readOnlyHint: true}},
  {name: 'secret-admin-tool', inputSchema: {type: 'object'}},
]

interface Seen {
  method: string
  acceptEncoding: string | undefined
  authorization: string | undefined
}

interface Target {
  url: string
  seen: Seen[]
  server: Server
}

/**
 * A JSON-RPC target. `gzip`: 'always' compresses whatever the client accepts (some middleware
 * does), 'negotiated' only when accept-encoding allows it. `bearer`: answer 401 unless the request
 * carries exactly this Authorization.
 */
async function startTarget(opts: {
  gzip: 'always' | 'negotiated'
  bearer?: () => string
}): Promise<Target> {
  const seen: Seen[] = []
  const server = createServer((req: IncomingMessage, res) => {
    let body = ''
    req.on('data', (d: Buffer) => (body += d.toString()))
    req.on('end', () => {
      const msg = JSON.parse(body) as {id: number; method: string}
      seen.push({
        method: msg.method,
        acceptEncoding: req.headers['accept-encoding'],
        authorization: req.headers.authorization,
      })
      if (opts.bearer && req.headers.authorization !== `Bearer ${opts.bearer()}`) {
        res.writeHead(401, {'content-type': 'application/json', 'www-authenticate': 'Bearer'})
        res.end('{"error":"invalid_token"}')
        return
      }
      const result =
        msg.method === 'tools/list' ? {tools: TOOLS} : {content: [{type: 'text', text: 'called'}]}
      const text = JSON.stringify({jsonrpc: '2.0', id: msg.id, result})
      const compress =
        opts.gzip === 'always' || /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''))
      if (compress) {
        res.writeHead(200, {'content-type': 'application/json', 'content-encoding': 'gzip'})
        res.end(gzipSync(text))
      } else {
        res.writeHead(200, {'content-type': 'application/json'})
        res.end(text)
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {url: `http://127.0.0.1:${(server.address() as {port: number}).port}`, seen, server}
}

async function stopTarget(t: Target | undefined): Promise<void> {
  if (!t) return
  t.server.closeAllConnections()
  await new Promise((r) => t.server.close(r))
}

const rpc = (id: number, method: string, params?: unknown) =>
  JSON.stringify({jsonrpc: '2.0', id, method, ...(params === undefined ? {} : {params})})

describe('proxy with an interceptor: what the target is asked for and what the client reads', () => {
  let dir: string
  let idp: OidcProviderFixture
  let policyFile: string
  let token: string
  const logger = createMemoryLogger()
  const running: RunningProxy[] = []
  const targets: Target[] = []

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolgate-proxy-interceptor-'))
    policyFile = join(dir, 'authz.json')
    await writeFile(
      policyFile,
      JSON.stringify({
        version: '1.0',
        type: 'cedarv1',
        cedar: {policies: POLICIES, entities_json: '[]'},
      }),
    )
    idp = await startOidcProvider()
    token = await idp.issueAccessToken({sub: 'carol'})
  })
  after(async () => {
    for (const p of running) await p.close().catch(() => undefined)
    for (const t of targets) await stopTarget(t)
    await idp?.close()
    await rm(dir, {recursive: true, force: true})
  })

  /** The proxy as `toolgate proxy --oidc-issuer … --authz-config …` builds it (loopback issuer allowed). */
  async function proxyTo(target: Target, passthrough = false): Promise<string> {
    targets.push(target)
    const config = proxyConfigFromFlags(
      'interceptor-test',
      {
        'target-uri': target.url,
        host: '127.0.0.1',
        'max-request-body-size': 0,
        'oidc-issuer': idp.issuer,
        'oidc-audience': idp.audience,
        'remote-forward-incoming-token': passthrough,
      },
      {logger},
    )
    config.interceptor = await loadAuthzInterceptor(policyFile, {logger})
    const oauth = oauthConfigFromOidc(config.oidc!, config.resourceUrl)
    for (const p of oauth.providers) p.allowPrivateIP = true
    const proxy = await startProxy(config, {
      logger,
      authenticator: createAuthenticator(oauth, {logger}),
    })
    running.push(proxy)
    return proxy.url
  }

  /** fetch decodes a content-encoding it is told about, so a mislabelled body fails here. */
  async function post(
    url: string,
    body: string,
  ): Promise<{status: number; encoding: string | null; json: Record<string, unknown>}> {
    const res = await fetch(url + '/mcp', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'accept-encoding': 'gzip',
        authorization: `Bearer ${token}`,
      },
      body,
      signal: AbortSignal.timeout(30_000),
    })
    return {
      status: res.status,
      encoding: res.headers.get('content-encoding'),
      json: (await res.json()) as Record<string, unknown>,
    }
  }

  it('asks the target for identity coding, so a list answer arrives filtered and readable', async () => {
    const target = await startTarget({gzip: 'negotiated'})
    const url = await proxyTo(target)
    const res = await post(url, rpc(7, 'tools/list'))
    assert.equal(res.status, 200)
    assert.deepEqual(
      (res.json.result as {tools: {name: string}[]}).tools.map((t) => t.name),
      ['echo'],
    )
    assert.equal(target.seen.at(-1)?.acceptEncoding, 'identity')
  })

  it('turns a list answer the target compressed anyway into a readable JSON-RPC error without content-encoding', async () => {
    const target = await startTarget({gzip: 'always'})
    const url = await proxyTo(target)
    const res = await post(url, rpc(8, 'tools/list'))
    assert.equal(res.encoding, null)
    assert.equal(res.json.id, 8)
    assert.equal((res.json.error as {code: number}).code, -32603)
    assert.doesNotMatch(JSON.stringify(res.json), /secret-admin-tool/)
  })

  it("never sends the client's token upstream by default (no token passthrough), not even on the interceptor's own call", async () => {
    const target = await startTarget({gzip: 'negotiated'})
    const url = await proxyTo(target)
    const res = await post(url, rpc(10, 'tools/call', {name: 'echo', arguments: {}}))
    assert.equal(res.status, 200, JSON.stringify(res.json))
    assert.ok(target.seen.length >= 2)
    for (const s of target.seen) assert.equal(s.authorization, undefined, s.method)
  })

  it("with --remote-forward-incoming-token, sends the client's Authorization on the interceptor's own upstream call too", async () => {
    const target = await startTarget({gzip: 'negotiated', bearer: () => token})
    const url = await proxyTo(target, true)
    const res = await post(url, rpc(9, 'tools/call', {name: 'echo', arguments: {}}))
    assert.equal(res.status, 200, JSON.stringify(res.json))
    assert.deepEqual(res.json.result, {content: [{type: 'text', text: 'called'}]})
    const list = target.seen.find((s) => s.method === 'tools/list')
    assert.equal(list?.authorization, `Bearer ${token}`)
  })
})
