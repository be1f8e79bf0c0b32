/**
 * toolgate behind a corporate network (issue 34): a real forward proxy (tinyproxy) that alone can
 * resolve `idp.corp.test` and `mcp.corp.test` (test/helpers/forward-proxy.ts), and TLS signed by a
 * private CA (openssl) on a real oidc-provider and a real MCP server. Every outbound request must
 * go through the proxy — a request that bypassed it could not resolve the name — and trust the CA
 * only when told to (`--ca-cert`, `NODE_EXTRA_CA_CERTS`). `NO_PROXY` bypasses it, loopback is
 * always direct, a proxy that wants credentials gets them from the proxy URL, and never shows them.
 */
import assert from 'node:assert/strict'
import {createServer as createHttpsServer, type Server} from 'node:https'
import {writeFileSync} from 'node:fs'
import {mkdtemp, rm} from 'node:fs/promises'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StdioClientTransport} from '@modelcontextprotocol/sdk/client/stdio.js'
import {McpServer} from '@modelcontextprotocol/sdk/server/mcp.js'
import {StreamableHTTPServerTransport} from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import {needs} from '../helpers/component.ts'
import {
  forwardProxyMissing,
  startForwardProxy,
  type ForwardProxy,
} from '../helpers/forward-proxy.ts'
import {startOidcProvider, type OidcProviderFixture} from '../helpers/oidc-provider.ts'
import {runCli, stop, waitFor} from '../helpers/proxy-run.ts'
import {createTestPki, type TestPki} from '../helpers/tls.ts'
import {mcpClient, textOf, UNRULY} from '../helpers/workload.ts'

const skip = needs('tinyproxy and unshare (the corporate forward proxy)', forwardProxyMissing())

/** A stateless MCP server over HTTPS with one tool, as a remote server behind the proxy. */
async function startHttpsMcp(pki: TestPki): Promise<{server: Server; port: number}> {
  const server = createHttpsServer({cert: pki.cert, key: pki.key}, async (req, res) => {
    const mcp = new McpServer({name: 'corp', version: '1.0.0'})
    mcp.registerTool('whereami', {}, async () => ({content: [{type: 'text', text: 'inside corp'}]}))
    const transport = new StreamableHTTPServerTransport({sessionIdGenerator: undefined})
    res.on('close', () => void transport.close().then(() => mcp.close()))
    await mcp.connect(transport)
    await transport.handleRequest(req, res)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {server, port: (server.address() as AddressInfo).port}
}

describe('outbound proxy and private CA', {skip}, () => {
  let home: string
  let pki: TestPki
  let idp: OidcProviderFixture
  let mcp: {server: Server; port: number}
  let proxy: ForwardProxy
  let locked: ForwardProxy
  const mcpUrl = () => `https://mcp.corp.test:${mcp.port}/mcp`
  const discovery = () => `${idp.issuer}/.well-known/openid-configuration`

  async function cli(argv: string[], env: NodeJS.ProcessEnv = {}) {
    const run = runCli(argv, home, env)
    const code = await run.exited
    return {code, stdout: run.stdout(), stderr: run.stderr()}
  }

  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'toolgate-corp-'))
    pki = createTestPki({altNames: ['DNS:idp.corp.test', 'DNS:mcp.corp.test', 'DNS:api.corp.test']})
    idp = await startOidcProvider({
      tls: {cert: pki.cert, key: pki.key},
      hostname: 'idp.corp.test',
      audience: 'api://corp',
    })
    mcp = await startHttpsMcp(pki)
    proxy = await startForwardProxy({hosts: ['idp.corp.test', 'mcp.corp.test', 'api.corp.test']})
    locked = await startForwardProxy({
      hosts: ['idp.corp.test'],
      basicAuth: {user: 'alice', password: 'pr0xy-s3cret'},
    })
  })
  after(async () => {
    await Promise.all([proxy?.close(), locked?.close(), idp?.close()])
    mcp?.server.close()
    pki?.cleanup()
    await rm(home, {recursive: true, force: true})
  })

  it('proxy: discovery, JWKS and the remote MCP server all go through the proxy (--proxy-url, --ca-cert)', async () => {
    const before = proxy.requests().length
    const run = runCli(
      [
        'proxy',
        'corp',
        '--target-uri',
        mcpUrl(),
        '--oidc-issuer',
        idp.issuer,
        '--oidc-audience',
        'api://corp',
        '--proxy-url',
        proxy.url,
        '--ca-cert',
        pki.caCertPath,
        // Only the proxy can resolve *.corp.test here: the SSRF guard may leave names to it.
        '--proxy-dns',
        '--json',
      ],
      home,
    )
    try {
      const line = await waitFor(
        'listening',
        () =>
          run
            .stdout()
            .split('\n')
            .find((l) => l.startsWith('{')),
        run,
      )
      const {clientUrl} = JSON.parse(line) as {clientUrl: string}
      const now = Math.floor(Date.now() / 1000)
      const token = await idp.signJwt({
        iss: idp.issuer,
        aud: 'api://corp',
        sub: 'alice',
        iat: now,
        exp: now + 300,
      })
      const client = await mcpClient(clientUrl, {token})
      assert.equal(textOf(await client.callTool({name: 'whereami', arguments: {}})), 'inside corp')
      await client.close()
      const seen = proxy.requests().slice(before)
      assert.ok(seen.includes(`CONNECT idp.corp.test:${idp.port}`), seen.join('\n'))
      assert.ok(seen.includes(`CONNECT mcp.corp.test:${mcp.port}`), seen.join('\n'))
      // Discovery and JWKS were fetched (through that tunnel: the provider saw them).
      const paths = idp.requests.map((r) => r.path)
      assert.ok(
        paths.includes('/.well-known/openid-configuration') && paths.includes('/jwks'),
        paths.join(' '),
      )
    } finally {
      await stop(run)
    }
  })

  it('proxy stdio to a remote server: HTTPS_PROXY and NODE_EXTRA_CA_CERTS from the environment', async () => {
    const before = proxy.requests().length
    const client = new Client({name: 'desktop', version: '1'})
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: ['bin/dev.js', 'proxy', 'stdio', mcpUrl()],
        env: {
          PATH: process.env.PATH ?? '',
          HOME: home,
          XDG_CONFIG_HOME: join(home, 'config'),
          XDG_DATA_HOME: join(home, 'data'),
          XDG_STATE_HOME: join(home, 'state'),
          https_proxy: proxy.url,
          NODE_EXTRA_CA_CERTS: pki.caCertPath,
        },
        stderr: 'ignore',
      }),
    )
    try {
      assert.equal(textOf(await client.callTool({name: 'whereami', arguments: {}})), 'inside corp')
    } finally {
      await client.close()
    }
    assert.ok(proxy.requests().slice(before).includes(`CONNECT mcp.corp.test:${mcp.port}`))
  })

  it('serve: an api source on the corporate network syncs through the proxy (serve.yaml network:)', async () => {
    const api = createHttpsServer({cert: pki.cert, key: pki.key}, (req, res) => {
      res.writeHead(200, {'content-type': 'application/json'}).end(
        JSON.stringify({
          servers: [
            {
              server: {name: 'io.corp/inside', version: '1.0.0', description: 'inside corp'},
              _meta: {},
            },
          ],
          metadata: {},
        }),
      )
    })
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r))
    const apiPort = (api.address() as AddressInfo).port
    const config = join(home, 'serve.yaml')
    writeFileSync(
      config,
      [
        'auth: {mode: anonymous}',
        `network: {proxy: "${proxy.url}", caCertPath: "${pki.caCertPath}"}`,
        'sources:',
        '  - name: corp',
        `    api: {endpoint: "https://api.corp.test:${apiPort}"}`,
        '    syncPolicy: {interval: 1h}',
      ].join('\n'),
    )
    const before = proxy.requests().length
    const serve = runCli(
      [
        'serve',
        '--config',
        config,
        '--address',
        '127.0.0.1:0',
        '--internal-address',
        '127.0.0.1:0',
        '--json',
      ],
      home,
    )
    try {
      const line = await waitFor(
        'listening',
        () =>
          serve
            .stdout()
            .split('\n')
            .find((l) => l.startsWith('{')),
        serve,
      )
      const {url} = JSON.parse(line) as {url: string}
      const list = (await (await fetch(`${url}/registry/default/v0.1/servers`)).json()) as {
        servers: {server: {name: string}}[]
      }
      assert.deepEqual(
        list.servers.map((s) => s.server.name),
        ['io.corp/inside'],
      )
      assert.ok(proxy.requests().slice(before).includes(`CONNECT api.corp.test:${apiPort}`))
    } finally {
      await stop(serve)
      api.close()
    }
  })

  it('without the CA: a clear TLS error naming the host and the trust in force; with it: reached', async () => {
    const env = {HTTPS_PROXY: proxy.url}
    const refused = await cli(['doctor', 'network', discovery()], env)
    assert.equal(refused.code, 69, refused.stdout + refused.stderr)
    assert.match(refused.stdout, new RegExp(`through ${proxy.url} \\(from HTTPS_PROXY\\)`))
    assert.match(
      refused.stdout,
      /outbound request to idp\.corp\.test:\d+ failed TLS verification \(\w+\); trusted: Node's bundled roots; add the CA with --ca-cert, NODE_EXTRA_CA_CERTS or --use-system-ca/,
    )
    const ok = await cli(
      ['doctor', 'network', discovery(), '--ca-cert', pki.caCertPath, '--json'],
      env,
    )
    assert.equal(ok.code, 0, ok.stdout + ok.stderr)
    const report = JSON.parse(ok.stdout) as {
      event: string
      reached: boolean
      status: number
      trust: string[]
    }
    assert.equal(report.event, 'network')
    assert.deepEqual([report.reached, report.status], [true, 200])
    assert.deepEqual(report.trust, ["Node's bundled roots", `--ca-cert ${pki.caCertPath}`])
  })

  it('NO_PROXY sends a host around the proxy (which here means it cannot be found)', async () => {
    const before = proxy.requests().length
    for (const noProxy of ['.corp.test', 'idp.corp.test', `idp.corp.test:${idp.port}`, '*']) {
      const r = await cli(['doctor', 'network', discovery(), '--ca-cert', pki.caCertPath], {
        HTTPS_PROXY: proxy.url,
        no_proxy: noProxy,
      })
      assert.equal(r.code, 69, `${noProxy}: ${r.stdout}`)
      assert.match(r.stdout, /direct \(NO_PROXY matches\)/)
      assert.match(r.stdout, /failed \(ENOTFOUND\)/)
    }
    // A NO_PROXY entry for another port, or another domain, leaves the proxy in use.
    const other = await cli(['doctor', 'network', discovery(), '--ca-cert', pki.caCertPath], {
      HTTPS_PROXY: proxy.url,
      NO_PROXY: `idp.corp.test:1,notcorp.test,10.0.0.0/8`,
    })
    assert.equal(other.code, 0, other.stdout)
    assert.deepEqual(proxy.requests().slice(before), [`CONNECT idp.corp.test:${idp.port}`])
  })

  it('a proxy that wants credentials: 407 said plainly; user:password in the URL works and never shows', async () => {
    const without = await cli(['doctor', 'network', discovery(), '--ca-cert', pki.caCertPath], {
      HTTPS_PROXY: locked.url,
    })
    assert.equal(without.code, 69)
    assert.match(
      without.stdout,
      /the proxy http:\/\/127\.0\.0\.1:\d+ refused it \(HTTP 407, proxy credentials missing or wrong\)/,
    )
    const withCreds = await cli(
      [
        'doctor',
        'network',
        discovery(),
        '--ca-cert',
        pki.caCertPath,
        '--proxy-url',
        locked.url.replace('://', '://alice:pr0xy-s3cret@'),
      ],
      {},
    )
    assert.equal(withCreds.code, 0, withCreds.stdout + withCreds.stderr)
    assert.match(withCreds.stdout, /through http:\/\/\*\*\*@127\.0\.0\.1:\d+ \(from --proxy-url\)/)
    assert.ok(
      !(withCreds.stdout + withCreds.stderr).includes('pr0xy-s3cret'),
      'the password never shows',
    )
    assert.ok(locked.requests().includes(`CONNECT idp.corp.test:${idp.port}`))
  })

  it('loopback is always direct: workloads work with a proxy set that cannot reach them', async () => {
    const dead = {HTTPS_PROXY: 'http://127.0.0.1:1', HTTP_PROXY: 'http://127.0.0.1:1'}
    assert.equal((await cli(['run', 'local', '--', ...UNRULY], dead)).code, 0)
    try {
      const client = new Client({name: 'desktop', version: '1'})
      await client.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: ['bin/dev.js', 'proxy', 'stdio', 'local'],
          env: {
            PATH: process.env.PATH ?? '',
            HOME: home,
            XDG_CONFIG_HOME: join(home, 'config'),
            XDG_DATA_HOME: join(home, 'data'),
            XDG_STATE_HOME: join(home, 'state'),
            ...dead,
          },
          stderr: 'ignore',
        }),
      )
      const answer = await client.callTool({name: 'echo', arguments: {message: 'direct'}})
      assert.equal(textOf(answer), 'echo: direct')
      await client.close()
      const r = await cli(['doctor', 'network', 'http://localhost:1/'], dead)
      assert.match(r.stdout, /direct \(loopback is never proxied\)/)
    } finally {
      await cli(['stop', 'local'])
    }
  })

  it('bad proxy settings are refused with the variable named, and no secret in the message', async () => {
    const r = await cli(['doctor', 'network'], {HTTPS_PROXY: 'socks5://bob:hunter2@proxy:1080'})
    assert.equal(r.code, 78)
    assert.match(r.stderr, /HTTPS_PROXY: socks5: proxies are not supported/)
    assert.ok(!r.stderr.includes('hunter2'))
    const missing = await cli(['doctor', 'network', '--ca-cert', join(home, 'nope.pem')])
    assert.equal(missing.code, 78)
    assert.match(missing.stderr, /--ca-cert .*nope\.pem cannot be read \(ENOENT\)/)
  })
})
