import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {COMMANDS} from '../../src/index.ts'

/**
 * The non-interactive guarantee (CI and headless use): with `CI=1`, stdin closed and no keyring,
 * no command prompts, opens a browser or waits for a person. Each command line below either ends
 * within 10 s, or — where serving is its job — is still serving at 10 s and stops on SIGTERM.
 * Every command in the COMMANDS map must be listed: a new command without a row fails this test.
 */
type Expect = {ends: number | 'non-zero'} | {serves: true}

interface Row {
  argv: (dir: string) => string[]
  expect: Expect
  /** What is being checked (a prompt that could have waited, a login that needs a person…). */
  why: string
}

const ROWS: Record<string, Row[]> = {
  serve: [
    {
      argv: (d) => [
        'serve',
        '--config',
        join(d, 'anon.yaml'),
        '--address',
        '127.0.0.1:0',
        '--internal-address',
        '127.0.0.1:0',
      ],
      expect: {serves: true},
      why: 'serves without asking anything',
    },
  ],
  proxy: [
    {
      argv: () => ['proxy', 'p', '--target-uri', 'http://127.0.0.1:9', '--port', '0'],
      expect: {serves: true},
      why: 'a plain proxy serves',
    },
    {
      argv: () => [
        'proxy',
        'p',
        '--target-uri',
        'http://127.0.0.1:9',
        '--remote-auth',
        '--remote-auth-issuer',
        'http://127.0.0.1:9',
      ],
      expect: {ends: 'non-zero'},
      why: 'a remote login cannot start (no server) and nothing waits',
    },
  ],
  'proxy:stdio': [
    {
      // stdin is closed: the relay ends at once, exit 0, with nothing on stdout.
      argv: () => ['proxy', 'stdio', 'http://127.0.0.1:9/mcp'],
      expect: {ends: 0},
      why: 'a relay whose stdin is closed ends',
    },
    {
      argv: () => [
        'proxy',
        'stdio',
        'http://127.0.0.1:9/mcp',
        '--remote-auth',
        '--remote-auth-issuer',
        'http://127.0.0.1:9',
      ],
      expect: {ends: 'non-zero'},
      why: 'a remote login that would need a person fails at once',
    },
  ],
  'proxy:tunnel': [
    {
      argv: () => [
        'proxy',
        'tunnel',
        'http://127.0.0.1:9',
        't',
        '--tunnel-provider',
        'ngrok',
        '--provider-args',
        '{"auth-token":"t","dry-run":true}',
      ],
      expect: {serves: true},
      why: 'a dry-run tunnel stays up without asking anything',
    },
    {
      argv: () => [
        'proxy',
        'tunnel',
        'http://127.0.0.1:9',
        't',
        '--tunnel-provider',
        'ssh',
        '--provider-args',
        '{"host":"127.0.0.1","port":9}',
      ],
      expect: {ends: 'non-zero'},
      why: 'ssh in BatchMode never prompts: an unreachable host ends it',
    },
  ],
  'auth:token': [
    {
      argv: () => [
        'auth',
        'token',
        'http://127.0.0.1:9/mcp',
        '--remote-auth-issuer',
        'http://127.0.0.1:9',
      ],
      expect: {ends: 'non-zero'},
      why: 'no login can start, no wait',
    },
  ],
  'auth:explain': [
    {
      argv: () => ['auth', 'explain', '--oidc-issuer', 'http://127.0.0.1:9'],
      expect: {ends: 2},
      why: 'no token on a closed stdin: a usage error, no wait for input',
    },
    {
      argv: () => ['auth', 'explain', '--oidc-issuer', 'http://127.0.0.1:9', '--token', 'opaque'],
      expect: {ends: 1},
      why: 'an unreachable provider refuses the token, as the server would',
    },
  ],
  'authz:check': [
    {
      argv: (d) => [
        'authz',
        'check',
        '--authz-config',
        join(d, 'policy.yaml'),
        '--claims',
        join(d, 'claims.json'),
        '--method',
        'tools/call',
        '--params',
        '{"name":"echo"}',
      ],
      expect: {ends: 0},
      why: 'decides from files alone, asks nothing',
    },
  ],
  'authz:lint': [
    {
      argv: (d) => ['authz', 'lint', join(d, 'policy.yaml')],
      expect: {ends: 0},
      why: 'lints a file, asks nothing',
    },
  ],
  'secret:setup': [
    {argv: () => ['secret', 'setup'], expect: {ends: 2}, why: 'the master password prompt'},
  ],
  'secret:set': [
    {argv: () => ['secret', 'set', 'x'], expect: {ends: 'non-zero'}, why: 'the value from stdin'},
  ],
  'secret:get': [
    {argv: () => ['secret', 'get', 'x'], expect: {ends: 'non-zero'}, why: 'no store yet'},
  ],
  run: [
    {
      // The server answers initialize (run's start check), lives 5 s, then the background process
      // ends with it.
      argv: () => [
        'run',
        'ni',
        '--',
        'timeout',
        '5',
        process.execPath,
        'test/fixtures/mcp/tenant-server.ts',
      ],
      expect: {ends: 0},
      why: 'a detached run returns once the workload is up',
    },
    {
      argv: () => [
        'run',
        'ni-fg',
        '--foreground',
        '--',
        process.execPath,
        'test/fixtures/mcp/tenant-server.ts',
      ],
      expect: {serves: true},
      why: 'a foreground run serves',
    },
  ],
  gateway: [
    {argv: () => ['gateway', 'ni-gw'], expect: {ends: 78}, why: 'no backend: refused at once'},
    {
      argv: () => ['gateway', 'ni-gw-fg', '--foreground', '--backend', 'ghost'],
      expect: {serves: true},
      why: 'a foreground gateway serves (its backend joins when it starts)',
    },
  ],
  list: [{argv: () => ['list', '--all'], expect: {ends: 0}, why: 'lists without asking'}],
  version: [{argv: () => ['version', '--json'], expect: {ends: 0}, why: 'prints and ends'}],
  logs: [{argv: () => ['logs', 'ni'], expect: {ends: 1}, why: 'a missing workload ends at once'}],
  stop: [{argv: () => ['stop', '--all'], expect: {ends: 0}, why: 'stops without asking'}],
  rm: [
    {argv: () => ['rm', 'nothing-here'], expect: {ends: 1}, why: 'a missing workload ends at once'},
  ],
  'secret:list': [{argv: () => ['secret', 'list'], expect: {ends: 0}, why: 'an empty list'}],
  'client:list': [{argv: () => ['client', 'list'], expect: {ends: 0}, why: 'lists without asking'}],
  'client:add': [
    {
      argv: () => ['client', 'add', 'ni'],
      expect: {ends: 2},
      why: 'no client named: says so, asks nothing',
    },
  ],
  'client:setup': [
    {
      argv: () => ['client', 'setup'],
      expect: {ends: 2},
      why: 'the picker needs a terminal: names the flags instead',
    },
  ],
  'client:remove': [
    {
      argv: () => ['client', 'remove', 'ni'],
      expect: {ends: 0},
      why: 'nothing written for it: says so',
    },
  ],
  'audit:verify': [
    {
      argv: (d) => ['audit', 'verify', join(d, 'no-audit.log')],
      expect: {ends: 78},
      why: 'a missing file ends at once',
    },
  ],
  // No registry reachable here (port 9 refuses): each ends with its error, none asks anything.
  'registry:list': [
    {
      argv: () => ['registry', 'list', '--registry', 'http://127.0.0.1:9/registry/x'],
      expect: {ends: 69},
      why: 'the registry is unreachable: says so and ends',
    },
    {
      argv: () => ['registry', 'list', '--registry', 'http://127.0.0.1:9', '--remote-auth'],
      expect: {ends: 'non-zero'},
      why: 'a login would need a person: refused under CI, no browser',
    },
  ],
  'registry:search': [
    {
      argv: () => ['registry', 'search', 'x', '--registry', 'http://127.0.0.1:9'],
      expect: {ends: 69},
      why: 'unreachable: ends',
    },
  ],
  'registry:show': [
    {
      argv: () => ['registry', 'show', 'io.x/y', '--registry', 'http://127.0.0.1:9'],
      expect: {ends: 69},
      why: 'unreachable: ends',
    },
  ],
  'registry:publish': [
    {
      argv: () => ['registry', 'publish', '-'],
      expect: {ends: 2},
      why: 'no registry named: a usage error, stdin (closed) is never waited on',
    },
  ],
  'registry:status': [
    {
      argv: () => ['registry', 'status', 'io.x/y@1.0.0', 'deleted'],
      expect: {ends: 2},
      why: 'no registry named: a usage error',
    },
  ],
  'doctor:network': [
    {argv: () => ['doctor', 'network'], expect: {ends: 0}, why: 'prints the settings and ends'},
  ],
  'secret:delete': [
    {argv: () => ['secret', 'delete', 'x'], expect: {ends: 'non-zero'}, why: 'no store yet'},
  ],
}

function run(
  argv: string[],
  home: string,
): Promise<{code: number | null; serving: boolean; stderr: string}> {
  const child = spawn(process.execPath, ['bin/dev.js', ...argv], {
    // stdin closed: a prompt would read EOF at once instead of hanging on a terminal.
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH,
      HOME: home,
      XDG_CONFIG_HOME: join(home, 'config'),
      XDG_DATA_HOME: join(home, 'data'),
      XDG_STATE_HOME: join(home, 'state'),
      CI: '1',
      DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent',
    },
  })
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  child.stdout.resume()
  return new Promise((resolve) => {
    let serving = false
    const timer = setTimeout(() => {
      serving = true
      child.kill('SIGTERM')
    }, 10_000)
    const kill = setTimeout(() => child.kill('SIGKILL'), 25_000)
    child.once('exit', (code) => {
      clearTimeout(timer)
      clearTimeout(kill)
      resolve({code, serving, stderr})
    })
  })
}

describe('non-interactive guarantee: every command under CI with stdin closed', () => {
  let dir: string
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolgate-ci-sweep-'))
    await writeFile(join(dir, 'anon.yaml'), 'auth:\n  mode: anonymous\n')
    await writeFile(
      join(dir, 'policy.yaml'),
      `version: '1.0'\ntype: cedarv1\ncedar:\n  policies:\n    - 'permit(principal, action, resource == Tool::"echo");'\n`,
    )
    await writeFile(join(dir, 'claims.json'), '{"sub":"alice"}')
  })
  after(() => rm(dir, {recursive: true, force: true}))

  it('on a real terminal too: CI or --non-interactive means no prompt (secret setup, secret set)', async () => {
    // `script` (util-linux) gives the command a pseudo-terminal on stdin: the prompt would wait.
    const pw = {TOOLGATE_SECRETS_PASSWORD: 'a-long-enough-password'}
    const cases: Array<[string, NodeJS.ProcessEnv, RegExp]> = [
      ['secret setup', {CI: '1'}, /TOOLGATE_SECRETS_PASSWORD/],
      ['secret set x', {CI: '1', ...pw}, /pipe it on stdin/],
      ['secret setup --non-interactive', {}, /TOOLGATE_SECRETS_PASSWORD/],
      ['secret set x --non-interactive', pw, /pipe it on stdin/],
    ]
    for (const [cmd, env, says] of cases) {
      const home = await mkdtemp(join(dir, 'tty-'))
      const child = spawn(
        'script',
        ['-qec', `${process.execPath} bin/dev.js ${cmd}`, '/dev/null'],
        {
          stdio: ['pipe', 'pipe', 'pipe'],
          env: {
            PATH: process.env.PATH,
            HOME: home,
            DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent',
            ...env,
          },
        },
      )
      let out = ''
      child.stdout.on('data', (d: Buffer) => (out += d.toString()))
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
      const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)))
      clearTimeout(timer)
      assert.equal(code, 2, `${cmd}: ${out}`)
      // A prompt would have waited on the terminal (its stdin never ends) until the 10 s kill.
      assert.match(out, says, `${cmd}: ${out}`)
    }
  })

  it('has a row for every command', () => {
    assert.deepEqual(
      Object.keys(COMMANDS).filter((id) => !ROWS[id]),
      [],
    )
  })

  for (const [id, rows] of Object.entries(ROWS)) {
    for (const row of rows) {
      it(`${id}: ${row.why}`, async () => {
        const home = await mkdtemp(join(dir, 'home-'))
        const r = await run(row.argv(dir), home)
        if ('serves' in row.expect) {
          assert.equal(
            r.serving,
            true,
            `expected it to keep serving; exited ${r.code}: ${r.stderr}`,
          )
          return
        }
        assert.equal(r.serving, false, `still running after 10 s: ${r.stderr}`)
        if (row.expect.ends === 'non-zero') assert.notEqual(r.code, 0, r.stderr)
        else assert.equal(r.code, row.expect.ends, r.stderr)
        assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace')
      })
    }
  }
})
