import assert from 'node:assert/strict'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir, userInfo} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {startSshd, sshdMissing, type Sshd} from '../helpers/sshd.ts'
import {runCli, stop, waitFor, type Run} from '../helpers/proxy-run.ts'
import {
  EVERYTHING,
  mcpClient,
  runForeground,
  textOf,
  type ForegroundWorkload,
} from '../helpers/workload.ts'

/**
 * `toolgate proxy tunnel`. SSH for real: a throwaway OpenSSH server on a free loopback port with its
 * own host key and an authorized test key, the system `ssh` client, and a server-everything workload
 * reached through the remote-forwarded port. ngrok: no test contacts ngrok's service (it cannot run
 * here), so only its dry run and every argument check are exercised.
 */
const tunnelLines = (run: Run) =>
  run
    .stdout()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as {url: string; pid?: number; remotePort?: number})

describe('toolgate proxy tunnel --tunnel-provider ssh', {skip: sshdMissing}, () => {
  let dir: string
  let sshd: Sshd
  let sshPort: number
  let workload: ForegroundWorkload
  let args: Record<string, unknown>

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolgate-sshd-'))
    sshd = await startSshd(dir)
    sshPort = sshd.port
    workload = await runForeground('tunneled', [], EVERYTHING, dir)
    args = {
      host: '127.0.0.1',
      port: sshPort,
      user: userInfo().username,
      'identity-file': sshd.clientKey,
      'known-hosts-file': sshd.knownHosts,
      'remote-port': 0,
    }
  })

  after(async () => {
    await workload?.stop()
    sshd?.stop()
    await rm(dir, {recursive: true, force: true})
  })

  it('publishes a workload through the reverse tunnel, and re-establishes it when ssh dies', async () => {
    const run = runCli(
      [
        'proxy',
        'tunnel',
        'tunneled',
        'public',
        '--json',
        '--tunnel-provider',
        'ssh',
        '--provider-args',
        JSON.stringify(args),
      ],
      dir,
    )
    try {
      const first = await waitFor('the tunnel URL', () => tunnelLines(run)[0], run, 30_000)
      assert.match(first.url, /^http:\/\/127\.0\.0\.1:\d+$/)
      assert.match(run.stderr(), /workload tunneled checks no incoming token/)
      const remote = `http://127.0.0.1:${first.remotePort}/mcp`
      const c = await mcpClient(remote)
      assert.equal(
        textOf(await c.callTool({name: 'echo', arguments: {message: 'through ssh'}})),
        'Echo: through ssh',
      )
      await c.close()

      process.kill(first.pid!, 'SIGKILL') // the ssh client dies: the tunnel comes back
      const second = await waitFor('a new tunnel', () => tunnelLines(run)[1], run, 30_000)
      const c2 = await mcpClient(`http://127.0.0.1:${second.remotePort}/mcp`)
      assert.equal(
        textOf(await c2.callTool({name: 'echo', arguments: {message: 'again'}})),
        'Echo: again',
      )
      await c2.close()

      const t0 = Date.now()
      run.child.kill('SIGINT')
      assert.equal(await run.exited, 0)
      assert.ok(Date.now() - t0 < 10_000, 'closes within 10 s')
    } finally {
      await stop(run)
    }
  })

  it("refuses an unknown host key (no prompt) and exits non-zero with ssh's message", async () => {
    const run = runCli(
      [
        'proxy',
        'tunnel',
        'tunneled',
        'public',
        '--tunnel-provider',
        'ssh',
        '--provider-args',
        JSON.stringify({...args, 'known-hosts-file': sshd.emptyKnownHosts}),
      ],
      dir,
    )
    assert.equal(await run.exited, 69)
    assert.match(run.stderr(), /Host key verification failed/)
  })
})

describe('toolgate proxy tunnel: ngrok dry run and argument checks', () => {
  let home: string
  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'toolgate-tunnel-'))
  })
  after(() => rm(home, {recursive: true, force: true}))

  it('a dry run with a URL target stays up, contacts nothing, and SIGINT ends it at once', async () => {
    const policy = join(home, 'policy.yml')
    await writeFile(policy, 'on_http_request:\n  - actions:\n      - type: deny\n')
    const run = runCli(
      [
        'proxy',
        'tunnel',
        'http://127.0.0.1:9',
        'demo',
        '--json',
        '--tunnel-provider',
        'ngrok',
        '--provider-args',
        JSON.stringify({
          'auth-token': 'tok',
          url: 'https://demo.ngrok.app',
          pooling: true,
          'traffic-policy-file': policy,
          'dry-run': true,
        }),
      ],
      home,
    )
    const line = await waitFor('the dry-run line', () => tunnelLines(run)[0], run)
    assert.equal(line.url, 'https://demo.ngrok.app')
    assert.doesNotMatch(run.stdout() + run.stderr(), /"tok"|auth-token.*tok\b/)
    await new Promise((r) => setTimeout(r, 500))
    assert.equal(run.child.exitCode, null, 'stays up until interrupted')
    const t0 = Date.now()
    run.child.kill('SIGINT')
    assert.equal(await run.exited, 0)
    assert.ok(Date.now() - t0 < 10_000)
  })

  it('a dry run with a workload target, and --require-auth refusing a workload without auth', async () => {
    const w = await runForeground('dry', [], EVERYTHING, home)
    try {
      const run = runCli(
        [
          'proxy',
          'tunnel',
          'dry',
          'd',
          '--tunnel-provider',
          'ngrok',
          '--provider-args',
          '{"dry-run":true}',
        ],
        home,
        {NGROK_AUTHTOKEN: 'from-env'},
      )
      await waitFor(
        'the dry-run line',
        () => (/Tunnel d open at/.test(run.stdout()) ? true : undefined),
        run,
      )
      run.child.kill('SIGTERM')
      assert.equal(await run.exited, 0)
      const refused = runCli(
        [
          'proxy',
          'tunnel',
          'dry',
          'd',
          '--require-auth',
          '--tunnel-provider',
          'ngrok',
          '--provider-args',
          '{"auth-token":"t","dry-run":true}',
        ],
        home,
      )
      assert.equal(await refused.exited, 2)
      assert.match(refused.stderr(), /checks no incoming token; --require-auth refuses/)
    } finally {
      await w.stop()
    }
  })

  const bad: Array<[string, string[], RegExp]> = [
    [
      'an unknown provider',
      ['--tunnel-provider', 'frp'],
      /"frp" is not supported \(supported: ngrok, ssh\)/,
    ],
    [
      'provider args that are not JSON',
      ['--tunnel-provider', 'ssh', '--provider-args', '{host'],
      /--provider-args: not JSON/,
    ],
    [
      'provider args that are not an object',
      ['--tunnel-provider', 'ssh', '--provider-args', '[1]'],
      /must be a JSON object/,
    ],
    [
      'an unknown key',
      ['--tunnel-provider', 'ngrok', '--provider-args', '{"authtoken":"x"}'],
      /unknown key "authtoken" for provider ngrok/,
    ],
    [
      'a value of the wrong type',
      ['--tunnel-provider', 'ssh', '--provider-args', '{"host":"h","remote-port":"80"}'],
      /"remote-port" must be an integer/,
    ],
    [
      'a missing required key',
      ['--tunnel-provider', 'ssh', '--provider-args', '{"user":"u"}'],
      /"host" is required for provider ssh/,
    ],
    [
      'an ssh value that would be an option',
      ['--tunnel-provider', 'ssh', '--provider-args', '{"host":"-oProxyCommand=x"}'],
      /"host" must not start with "-"/,
    ],
    [
      'ngrok without a token',
      ['--tunnel-provider', 'ngrok', '--provider-args', '{"dry-run":true}'],
      /"auth-token" is required for provider ngrok \(or set NGROK_AUTHTOKEN\)/,
    ],
    [
      'a traffic policy that is not YAML by name',
      [
        '--tunnel-provider',
        'ngrok',
        '--provider-args',
        '{"auth-token":"t","traffic-policy-file":"p.json","dry-run":true}',
      ],
      /must be a \.yml or \.yaml file/,
    ],
    [
      'a traffic policy file that does not exist',
      [
        '--tunnel-provider',
        'ngrok',
        '--provider-args',
        '{"auth-token":"t","traffic-policy-file":"/nonexistent/p.yml","dry-run":true}',
      ],
      /traffic-policy-file" \/nonexistent\/p.yml: ENOENT/,
    ],
  ]
  for (const [what, flags, message] of bad) {
    it(`refuses ${what} (exit 2) naming it`, async () => {
      const run = runCli(['proxy', 'tunnel', 'http://127.0.0.1:9', 'x', ...flags], home)
      assert.equal(await run.exited, 2)
      assert.match(run.stderr(), message)
    })
  }

  it('refuses a TARGET with a path, and a workload that is not running', async () => {
    const withPath = runCli(
      [
        'proxy',
        'tunnel',
        'http://127.0.0.1:9/mcp',
        'x',
        '--tunnel-provider',
        'ngrok',
        '--provider-args',
        '{"auth-token":"t","dry-run":true}',
      ],
      home,
    )
    assert.equal(await withPath.exited, 2)
    assert.match(withPath.stderr(), /give the URL without a path/)
    const notRunning = runCli(
      [
        'proxy',
        'tunnel',
        'ghost',
        'x',
        '--tunnel-provider',
        'ngrok',
        '--provider-args',
        '{"auth-token":"t","dry-run":true}',
      ],
      home,
    )
    assert.equal(await notRunning.exited, 1)
    assert.match(notRunning.stderr(), /workload "ghost" does not exist/)
  })
})
