/**
 * `toolgate run --sandbox` (issue 32) with the real bubblewrap: a dependency-free stdio server
 * (test/fixtures/mcp/sandbox-probe) tries what a sandbox must stop — reading a planted SSH key,
 * toolgate's secrets file and /etc/shadow, writing outside its `write` paths, connecting to the
 * host, fetching through the egress proxy — and what it must allow. Also server-everything
 * sandboxed, npm and PyPI packages installed outside and run inside (by hand and from a
 * registry), and the refusal when bwrap is missing.
 */
import assert from 'node:assert/strict'
import {execFileSync} from 'node:child_process'
import {chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import {mkdtemp, rm} from 'node:fs/promises'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import type {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {needs} from '../helpers/component.ts'
import {freePort} from '../helpers/mcp-upstream.ts'
import {serveNpmPackage, type LocalNpmRegistry} from '../helpers/npm-registry.ts'
import {runCli} from '../helpers/proxy-run.ts'
import {startServe, type ServeProcess} from '../helpers/serve-process.ts'
import {mcpClient, textOf} from '../helpers/workload.ts'
import {findBwrap} from '../../src/lib/sandbox/bwrap.ts'
import type {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'

const ROOT = process.cwd()
const PROBE_DIR = join(ROOT, 'test/fixtures/mcp/sandbox-probe')
const PROBE = [process.execPath, join(PROBE_DIR, 'index.js')]
const EVERYTHING = [
  process.execPath,
  join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'),
  'stdio',
]

const bwrap = ((): string | false => {
  try {
    return findBwrap()
  } catch {
    return false
  }
})()
const skip = needs(
  'bubblewrap (bwrap)',
  bwrap ? false : 'bwrap is not on PATH (apt install bubblewrap)',
)

let home: string
let sshKey: string
let writable: string
let outside: string
let allowedServer: Server
let refusedServer: Server
let allowedPort: number
let refusedPort: number

async function listen(body: string): Promise<Server> {
  const s = createServer((_req, res) => res.end(body))
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()))
  return s
}

before(async () => {
  home = await mkdtemp(join(tmpdir(), 'toolgate-sandbox-'))
  mkdirSync(join(home, '.ssh'), {mode: 0o700})
  sshKey = join(home, '.ssh', 'id_ed25519')
  writeFileSync(sshKey, '-----BEGIN OPENSSH PRIVATE KEY-----\nplanted\n', {mode: 0o600})
  // As root the server runs as uid 65534: its write path must be writable by that user.
  writable = join(home, 'out')
  mkdirSync(writable)
  chmodSync(writable, 0o777)
  outside = join(home, 'elsewhere')
  mkdirSync(outside)
  chmodSync(outside, 0o777)
  allowedServer = await listen('allowed-body')
  refusedServer = await listen('refused-body')
  allowedPort = (allowedServer.address() as AddressInfo).port
  refusedPort = (refusedServer.address() as AddressInfo).port
})
after(async () => {
  allowedServer?.close()
  refusedServer?.close()
  await rm(home, {recursive: true, force: true})
})

async function cli(argv: string[], env: NodeJS.ProcessEnv = {}, input?: string) {
  const r = runCli(argv, home, env, input)
  const code = await r.exited
  return {code, stdout: r.stdout(), stderr: r.stderr()}
}

/** A detached sandboxed run; returns a client and a stop. */
async function sandboxed(
  name: string,
  flags: string[],
  command: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{client: Client; url: string; stop: () => Promise<void>}> {
  const r = await cli(
    ['run', name, '--json', ...flags, ...(command.length ? ['--', ...command] : [])],
    env,
  )
  assert.equal(r.code, 0, r.stderr)
  const {url} = JSON.parse(r.stdout) as {url: string}
  const client = await mcpClient(url)
  return {
    client,
    url,
    stop: async () => {
      await client.close()
      await cli(['stop', name])
    },
  }
}

const call = async (c: Client, name: string, args: Record<string, unknown>) => {
  const r = await c.callTool({name, arguments: args})
  return {text: textOf(r), error: r.isError === true}
}

describe('run --sandbox with the built-in profile none', {skip}, () => {
  it('reads no SSH key, no secrets file, no /etc/shadow; writes nowhere on the host; has no network', async () => {
    assert.equal((await cli(['secret', 'set', 'api-key'], {}, 'sk-do-not-leak')).code, 0)
    const secretsFile = join(home, 'data', 'toolgate', 'secrets.enc')
    assert.ok(existsSync(secretsFile), 'the secrets file exists on the host')
    const {client, stop} = await sandboxed('none', ['--sandbox'], PROBE)
    try {
      for (const path of [sshKey, secretsFile, '/etc/shadow', join(home, 'state')]) {
        const r = await call(client, 'read_file', {path})
        assert.equal(r.error, true, `${path}: ${r.text}`)
        assert.doesNotMatch(r.text, /planted|sk-do-not-leak/)
      }
      const w = await call(client, 'write_file', {path: join(outside, 'x'), content: 'y'})
      assert.equal(w.error, true, w.text)
      assert.equal(existsSync(join(outside, 'x')), false)
      const who = JSON.parse((await call(client, 'whoami', {})).text) as {uid: number}
      if (process.getuid?.() === 0) assert.equal(who.uid, 65534, 'as root, the server is nobody')
      const c = await call(client, 'connect', {host: '127.0.0.1', port: allowedPort})
      assert.equal(c.error, true, `a host port is unreachable: ${c.text}`)
      const f = await call(client, 'fetch', {url: `http://127.0.0.1:${allowedPort}/`})
      assert.equal(f.error, true, f.text)
      assert.match((await cli(['list'])).stdout, /\bnone\b/)
    } finally {
      await stop()
    }
  })
})

describe('run --permission-profile FILE', {skip}, () => {
  it('writes its write path, fetches the allowed host:port through the proxy, is refused the other port; both are logged', async () => {
    const profile = join(home, 'profile.json')
    writeFileSync(
      profile,
      JSON.stringify({
        read: [],
        write: [writable],
        network: {outbound: {allow_host: ['127.0.0.1'], allow_port: [allowedPort]}},
      }),
    )
    const internal = await freePort()
    const {client, stop} = await sandboxed(
      'allowed',
      ['--permission-profile', profile, '--internal-address', `127.0.0.1:${internal}`],
      PROBE,
    )
    try {
      const w = await call(client, 'write_file', {
        path: join(writable, 'result.txt'),
        content: 'ok',
      })
      assert.equal(w.error, false, w.text)
      assert.equal(readFileSync(join(writable, 'result.txt'), 'utf8'), 'ok')
      const good = await call(client, 'fetch', {url: `http://127.0.0.1:${allowedPort}/`})
      assert.equal(good.text, '200 allowed-body')
      const bad = await call(client, 'fetch', {url: `http://127.0.0.1:${refusedPort}/`})
      assert.equal(bad.error, true, bad.text)
      assert.doesNotMatch(bad.text, /refused-body/)
      const direct = await call(client, 'connect', {host: '127.0.0.1', port: allowedPort})
      assert.equal(direct.error, true, 'around the proxy there is no network')
      // The workload logs JSON (it was started with --json): one line per connection.
      const egress = (await cli(['logs', 'allowed', '--proxy'])).stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as {msg: string; host?: string; port?: number; decision?: string})
        .filter((l) => l.msg === 'egress')
        .map((l) => `${l.host}:${l.port} ${l.decision}`)
      assert.ok(egress.includes(`127.0.0.1:${allowedPort} allow`), egress.join('; '))
      assert.ok(egress.includes(`127.0.0.1:${refusedPort} deny`), egress.join('; '))
      // And counted on /metrics, by decision.
      const metrics = await (await fetch(`http://127.0.0.1:${internal}/metrics`)).text()
      assert.match(metrics, /^toolgate_egress_decisions_total\{decision="allow"\} [1-9]/m)
      assert.match(metrics, /^toolgate_egress_decisions_total\{decision="deny"\} [1-9]/m)
    } finally {
      await stop()
    }
  })

  it('--isolation session: each session is a sandbox of its own, each reaching the egress proxy', async () => {
    const profile = join(home, 'profile-sessions.json')
    writeFileSync(
      profile,
      JSON.stringify({network: {outbound: {allow_host: ['127.0.0.1'], allow_port: [allowedPort]}}}),
    )
    const {client, url, stop} = await sandboxed(
      'sessions',
      ['--permission-profile', profile, '--isolation', 'session'],
      PROBE,
    )
    let second: Client | undefined
    try {
      second = await mcpClient(url)
      for (const c of [client, second]) {
        const good = await call(c, 'fetch', {url: `http://127.0.0.1:${allowedPort}/`})
        assert.equal(good.text, '200 allowed-body')
        const bad = await call(c, 'fetch', {url: `http://127.0.0.1:${refusedPort}/`})
        assert.equal(bad.error, true, bad.text)
      }
      // The first session ends, and its sandbox with it: the other one still reaches out.
      await (client.transport as StreamableHTTPClientTransport).terminateSession()
      const again = await call(second, 'fetch', {url: `http://127.0.0.1:${allowedPort}/`})
      assert.equal(again.text, '200 allowed-body')
    } finally {
      await second?.close()
      await stop()
    }
  })

  it("the server's NODE_OPTIONS reach the server, and not the init that holds toolgate's channel", async () => {
    // A preload that records every Node process it runs in, in the write path.
    const preloads = join(home, 'preloads')
    mkdirSync(preloads, {recursive: true})
    const preload = join(preloads, 'record.cjs')
    const record = join(writable, 'loaded.txt')
    writeFileSync(
      preload,
      `require('fs').appendFileSync(${JSON.stringify(record)}, process.argv.slice(1).join(' ').slice(0, 60) + '\\n')`,
    )
    const profile = join(home, 'profile-preload.json')
    writeFileSync(
      profile,
      JSON.stringify({
        read: [preloads],
        write: [writable],
        network: {outbound: {allow_host: ['127.0.0.1'], allow_port: [allowedPort]}},
      }),
    )
    const {client, stop} = await sandboxed(
      'preload',
      ['--permission-profile', profile, '-e', `NODE_OPTIONS=--require=${preload}`],
      PROBE,
    )
    try {
      const good = await call(client, 'fetch', {url: `http://127.0.0.1:${allowedPort}/`})
      assert.equal(good.text, '200 allowed-body')
      const lines = readFileSync(record, 'utf8').trim().split('\n')
      assert.deepEqual(lines, [join(PROBE_DIR, 'index.js')], 'loaded by the server alone')
    } finally {
      await stop()
    }
  })

  it('a bad profile is refused before anything starts, naming the field', async () => {
    const bad = join(home, 'bad.json')
    writeFileSync(bad, JSON.stringify({network: {outbound: {allow_port: [70000]}}}))
    const r = await cli(['run', 'badprofile', '--permission-profile', bad, '--', ...PROBE])
    assert.equal(r.code, 78)
    assert.match(r.stderr, /network\.outbound\.allow_port\[0\]: 70000 is not a port/)
    const both = await cli([
      'run',
      'both',
      '--no-sandbox',
      '--permission-profile',
      'none',
      '--',
      ...PROBE,
    ])
    assert.equal(both.code, 2)
    assert.match(both.stderr, /cannot go with --no-sandbox/)
  })
})

describe('real servers in the sandbox', {skip}, () => {
  it('server-everything sandboxed: tools/list and tools/call work', async () => {
    const profile = join(home, 'everything.json')
    writeFileSync(profile, JSON.stringify({read: [join(ROOT, 'node_modules')]}))
    const {client, stop} = await sandboxed(
      'everything',
      ['--permission-profile', profile],
      EVERYTHING,
    )
    try {
      const tools = await client.listTools()
      assert.ok(tools.tools.some((t) => t.name === 'echo'))
      assert.equal(
        textOf(await client.callTool({name: 'echo', arguments: {message: 'boxed'}})),
        'Echo: boxed',
      )
    } finally {
      await stop()
    }
  })

  describe('npm packages: installed outside, run inside', () => {
    let registry: LocalNpmRegistry
    let serve: ServeProcess
    before(async () => {
      registry = await serveNpmPackage(PROBE_DIR)
      writeFileSync(
        join(home, 'registry.json'),
        JSON.stringify([
          {
            name: 'io.github.test/probe',
            description: 'the sandbox probe as an npm package',
            version: '1.0.0',
            packages: [
              {
                registryType: 'npm',
                registryBaseUrl: registry.url,
                identifier: registry.name,
                version: registry.version,
                transport: {type: 'stdio'},
              },
            ],
          },
        ]),
      )
      writeFileSync(
        join(home, 'serve.yaml'),
        'sources:\n  - name: local\n    file: {path: ./registry.json}\nregistries:\n  - name: default\n    sources: [local]\nauth:\n  mode: anonymous\n',
      )
      serve = await startServe(
        [
          '--config',
          join(home, 'serve.yaml'),
          '--address',
          '127.0.0.1:0',
          '--internal-address',
          '127.0.0.1:0',
        ],
        {dir: home},
      )
    })
    after(async () => {
      await serve?.stop()
      await registry?.close()
    })

    it('--from-registry is sandboxed by default: the package is installed into the cache and runs confined', async () => {
      const {client, stop} = await sandboxed(
        'fromreg',
        ['--from-registry', `${serve.url}/registry/default`, 'io.github.test/probe@1.0.0'],
        [],
      )
      try {
        const installed = join(
          home,
          '.cache',
          'toolgate',
          'npm',
          'fromreg',
          'node_modules',
          'sandbox-probe',
          'index.js',
        )
        assert.ok(existsSync(installed), 'installed under $XDG_CACHE_HOME/toolgate/npm/<workload>/')
        assert.ok(registry.requests.some((r) => r.startsWith('GET /sandbox-probe')))
        const r = await call(client, 'read_file', {path: sshKey})
        assert.equal(r.error, true)
        const net = await call(client, 'fetch', {url: registry.url})
        assert.equal(net.error, true, 'no network inside: the install happened outside')
        assert.match((await cli(['list'])).stdout, /fromreg .*\bnone\b/)
      } finally {
        await stop()
      }
    })

    it('npx -y <package> given by hand is recognised and treated the same way', async () => {
      const {client, stop} = await sandboxed(
        'npx',
        ['--sandbox'],
        ['npx', '-y', 'sandbox-probe@1.0.0'],
        {
          npm_config_registry: registry.url,
        },
      )
      try {
        assert.ok(
          existsSync(
            join(home, '.cache', 'toolgate', 'npm', 'npx', 'node_modules', 'sandbox-probe'),
          ),
        )
        assert.equal((await call(client, 'read_file', {path: sshKey})).error, true)
      } finally {
        await stop()
      }
    })
  })
})

const pip = (() => {
  try {
    execFileSync('python3', ['-m', 'pip', '--version'], {stdio: 'ignore', timeout: 30_000})
    return false
  } catch {
    return 'python3 -m pip does not run (apt install python3-pip)'
  }
})()

/** A PEP 503 index serving the wheel of test/fixtures/pypi/toolgate_probe.py; logs requests. */
async function servePypiIndex(): Promise<{url: string; requests: string[]; close(): void}> {
  const dir = join(home, 'pypi-index')
  execFileSync('python3', [join(ROOT, 'test/fixtures/pypi/make_wheel.py'), dir])
  const requests: string[] = []
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`)
    const path = (req.url ?? '/').split('?')[0]!
    const file = path.endsWith('/') ? join(dir, path, 'index.html') : join(dir, path)
    if (path.includes('..') || !existsSync(file)) return void res.writeHead(404).end()
    const type = file.endsWith('.html') ? 'text/html' : 'application/octet-stream'
    res.writeHead(200, {'content-type': type}).end(readFileSync(file))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => server.close(),
  }
}

describe(
  'PyPI packages: installed outside, run inside',
  {skip: skip || needs('python3 with pip', pip)},
  () => {
    let index: Awaited<ReturnType<typeof servePypiIndex>>
    let serve: ServeProcess
    before(async () => {
      index = await servePypiIndex()
      writeFileSync(
        join(home, 'pypi-registry.json'),
        JSON.stringify([
          {
            name: 'io.github.test/pyprobe',
            description: 'the Python probe as a PyPI package',
            version: '1.0.0',
            packages: [
              {
                registryType: 'pypi',
                registryBaseUrl: index.url,
                identifier: 'toolgate-probe',
                version: '1.0.0',
                transport: {type: 'stdio'},
              },
            ],
          },
        ]),
      )
      writeFileSync(
        join(home, 'pypi-serve.yaml'),
        'sources:\n  - name: local\n    file: {path: ./pypi-registry.json}\nregistries:\n  - name: default\n    sources: [local]\nauth:\n  mode: anonymous\n',
      )
      serve = await startServe(
        ['--config', join(home, 'pypi-serve.yaml'), '--address', '127.0.0.1:0'],
        {dir: home},
      )
    })
    after(async () => {
      await serve?.stop()
      index?.close()
    })

    const installedModule = (workload: string) =>
      join(home, '.cache', 'toolgate', 'pypi', workload, 'toolgate_probe.py')

    it('uvx <package>@<version> given by hand: pip installs the wheel outside, it runs confined', async () => {
      const {client, stop} = await sandboxed(
        'pyhand',
        ['--sandbox'],
        ['uvx', 'toolgate-probe@1.0.0'],
        {PIP_INDEX_URL: `${index.url}/simple/`},
      )
      try {
        assert.ok(
          existsSync(installedModule('pyhand')),
          'installed under $XDG_CACHE_HOME/toolgate/pypi/<workload>/',
        )
        assert.ok(index.requests.some((r) => r.startsWith('GET /files/toolgate_probe-1.0.0')))
        const who = await call(client, 'whoami', {})
        assert.equal(who.error, false, who.text)
        assert.equal((await call(client, 'read_file', {path: sshKey})).error, true)
        const net = await call(client, 'fetch', {url: `${index.url}/simple/`})
        assert.equal(net.error, true, `no network inside: ${net.text}`)
      } finally {
        await stop()
      }
    })

    it('--from-registry with a PyPI package: installed from the index the entry names', async () => {
      const before = index.requests.length
      const {client, stop} = await sandboxed(
        'pyreg',
        ['--from-registry', `${serve.url}/registry/default`, 'io.github.test/pyprobe@1.0.0'],
        [],
      )
      try {
        assert.ok(existsSync(installedModule('pyreg')))
        assert.ok(
          index.requests.slice(before).some((r) => r.startsWith('GET /simple/toolgate-probe/')),
          'pip asked the index named by registryBaseUrl',
        )
        assert.equal((await call(client, 'read_file', {path: sshKey})).error, true)
        assert.match((await cli(['list'])).stdout, /pyreg .*\bnone\b/)
      } finally {
        await stop()
      }
    })

    it('a package with nothing to run, or that is not a wheel, is an error before anything starts', async () => {
      const r = await cli(['run', 'pymissing', '--sandbox', '--', 'uvx', 'no-such-package==9.9'], {
        PIP_INDEX_URL: `${index.url}/simple/`,
      })
      assert.notEqual(r.code, 0)
      assert.match(
        r.stderr,
        /pip install no-such-package==9\.9 failed \(exit 1\) before the sandboxed start/,
      )
      assert.doesNotMatch((await cli(['list', '--all'])).stdout, /pymissing\s+running/)
    })
  },
)

describe('without bubblewrap', () => {
  it('--sandbox fails with the package to install; nothing runs unconfined', async () => {
    const r = await cli(['run', 'nobwrap', '--sandbox', '--', ...PROBE], {PATH: '/nonexistent'})
    assert.equal(r.code, 69)
    assert.match(r.stderr, /bubblewrap \(bwrap\) is not installed.*apt install bubblewrap/)
    assert.doesNotMatch((await cli(['list', '--all'])).stdout, /nobwrap\s+running/)
  })
})
