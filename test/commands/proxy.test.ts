import assert from 'node:assert/strict'
import {spawn, type ChildProcess} from 'node:child_process'
import {createServer} from 'node:net'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {fileURLToPath} from 'node:url'
import {startRecordingUpstream, type RecordingUpstream} from '../helpers/mcp-upstream.ts'

/** Drives the real command: `node bin/dev.js proxy …` on the pinned Node. */
const root = join(fileURLToPath(import.meta.url), '..', '..', '..')
const children = new Set<ChildProcess>()

interface Run {
  child: ChildProcess
  stdout: () => string
  stderr: () => string
  exit: Promise<number | null>
}

function run(args: string[], env: NodeJS.ProcessEnv = {}): Run {
  const child = spawn(process.execPath, [join(root, 'bin', 'dev.js'), 'proxy', ...args], {
    cwd: root,
    env: {
      ...process.env,
      ...env,
      TOOLGATE_REMOTE_AUTH_BEARER_TOKEN: env.TOOLGATE_REMOTE_AUTH_BEARER_TOKEN ?? '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.add(child)
  let out = ''
  let err = ''
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()))
  const exit = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      children.delete(child)
      resolve(code)
    }),
  )
  return {child, stdout: () => out, stderr: () => err, exit}
}

async function firstLine(r: Run, timeoutMs = 60_000): Promise<string> {
  const deadline = Date.now() + timeoutMs
  while (!r.stdout().includes('\n')) {
    if (r.child.exitCode !== null) throw new Error(`exited ${r.child.exitCode}: ${r.stderr()}`)
    if (Date.now() > deadline) throw new Error(`no startup line: ${r.stderr()}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return r.stdout().split('\n')[0]!
}

describe('toolgate proxy (command)', () => {
  let upstream: RecordingUpstream
  before(async () => {
    upstream = await startRecordingUpstream()
  })
  after(async () => {
    for (const c of children) c.kill('SIGKILL')
    await upstream?.close()
  })

  it('prints a parseable startup line, proxies, and exits 0 on SIGTERM after draining in-flight requests', async () => {
    upstream.respond((_req, res) => {
      setTimeout(() => {
        res.writeHead(200, {'content-type': 'application/json'})
        res.end('{"slow":true}')
      }, 1500)
    })
    const r = run(['--target-uri', upstream.url, 'weather'])
    const line = await firstLine(r)
    const m =
      /^Proxy weather listening on (http:\/\/127\.0\.0\.1:(\d+)) -> (\S+) \(clients: (\S+)\)$/.exec(
        line,
      )
    assert.ok(m, line)
    assert.equal(m[3], upstream.url)
    assert.equal(m[4], `${m[1]}/mcp`)
    const seen = upstream.requests.length
    const inflight = fetch(m[1] + '/mcp', {method: 'POST', body: '{}'})
    await upstream.waitForRequest(seen + 1)
    r.child.kill('SIGTERM')
    const res = await inflight
    assert.equal(res.status, 200)
    assert.equal(await res.text(), '{"slow":true}')
    assert.equal(await r.exit, 0)
  })

  it('prints the startup line as JSON with --json and exits 0 on SIGINT', async () => {
    const r = run(['--target-uri', upstream.url, '--json', 'weather'])
    const info = JSON.parse(await firstLine(r))
    assert.equal(info.event, 'listening')
    assert.equal(info.name, 'weather')
    assert.equal(info.target, upstream.url)
    assert.match(info.url, /^http:\/\/127\.0\.0\.1:\d+$/)
    assert.equal(info.port, Number(new URL(info.url).port))
    r.child.kill('SIGINT')
    assert.equal(await r.exit, 0)
    // Every JSON line on stderr (the logs) names its event too.
    const lines = r
      .stderr()
      .split('\n')
      .filter((l) => l.startsWith('{'))
    assert.ok(lines.length > 0, r.stderr())
    for (const l of lines) assert.equal(typeof JSON.parse(l).event, 'string', l)
  })

  it('fails with a clear error when an explicit --port is busy', async () => {
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', () => resolve()))
    const port = (blocker.address() as {port: number}).port
    try {
      const r = run(['--target-uri', upstream.url, '--port', String(port), 'weather'])
      const code = await r.exit
      assert.notEqual(code, 0)
      assert.match(
        r.stderr(),
        new RegExp(`--port: address 127\\.0\\.0\\.1:${port} is already in use`),
      )
      assert.equal(r.stdout(), '')
    } finally {
      blocker.close()
    }
  })

  const usage: Array<[string, string[], RegExp]> = [
    [
      'a bearer token together with a token file',
      [
        '--remote-auth-bearer-token',
        'secret-token-value',
        '--remote-auth-bearer-token-file',
        '/tmp/x',
      ],
      /cannot be used together/,
    ],
    [
      'a token-exchange client secret together with its file',
      [
        '--token-exchange-url',
        'https://a.test/t',
        '--token-exchange-client-id',
        'c',
        '--token-exchange-client-secret',
        'secret-token-value',
        '--token-exchange-client-secret-file',
        '/tmp/x',
      ],
      /cannot be used together/,
    ],
    [
      'an injected header with a restricted name',
      ['--remote-forward-headers', 'X-Forwarded-For=secret-token-value'],
      /X-Forwarded-For" is managed by the proxy/,
    ],
    [
      'an injected header value with CR/LF',
      ['--remote-forward-headers', 'X-A=secret-token-value\r\nX-B: y'],
      /contains CR, LF or control characters/,
    ],
    [
      'a JWKS URL without --oidc-issuer or --oidc-audience',
      ['--oidc-jwks-url', 'https://idp.test/jwks'],
      /--oidc-jwks-url: also set --oidc-issuer or --oidc-audience/,
    ],
  ]
  for (const [what, args, pattern] of usage) {
    it(`refuses ${what} as a usage error (exit 2) without echoing secrets`, async () => {
      const r = run(['--target-uri', upstream.url, ...args, 'weather'])
      assert.equal(await r.exit, 2)
      assert.match(r.stderr(), pattern)
      assert.doesNotMatch(r.stderr() + r.stdout(), /secret-token-value/)
    })
  }

  it('requires --target-uri and SERVER_NAME', async () => {
    const r = run(['weather'])
    assert.notEqual(await r.exit, 0)
    assert.match(r.stderr(), /target-uri/)
  })
})
