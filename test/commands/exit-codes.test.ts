import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {createServer, type Server} from 'node:http'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'

/**
 * docs/exit-codes.md, one real command per exit code: what a CI shell sees. No keyring session
 * (the secrets store uses TOOLGATE_SECRETS_PASSWORD), fresh HOME, stdin closed.
 */
function run(
  argv: string[],
  home: string,
  env: NodeJS.ProcessEnv = {},
  stdin = '',
): Promise<{code: number | null; stderr: string}> {
  const child = spawn(process.execPath, ['bin/dev.js', ...argv], {
    stdio: ['pipe', 'ignore', 'pipe'],
    env: {
      PATH: process.env.PATH,
      HOME: home,
      XDG_DATA_HOME: join(home, 'data'),
      XDG_STATE_HOME: join(home, 'state'),
      DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent',
      TOOLGATE_SECRETS_PASSWORD: 'the-right-password',
      ...env,
    },
  })
  // A command that exits before reading stdin closes the pipe; that EPIPE is not under test.
  child.stdin.on('error', () => undefined)
  child.stdin.end(stdin)
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
  return new Promise((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(timer)
      resolve({code, stderr})
    }),
  )
}

describe('exit codes (docs/exit-codes.md)', () => {
  let home: string
  let busy: Server
  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'toolgate-exit-'))
    busy = createServer()
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', () => resolve()))
    assert.equal((await run(['secret', 'set', 'present'], home, {}, 'value')).code, 0)
  })
  after(async () => {
    await new Promise<void>((resolve) => busy.close(() => resolve()))
    await rm(home, {recursive: true, force: true})
  })

  const table: Array<[number, string, () => Promise<{code: number | null; stderr: string}>]> = [
    [0, 'success: secret list', () => run(['secret', 'list'], home)],
    [
      1,
      'a failed lookup: secret get of a missing name',
      () => run(['secret', 'get', 'absent'], home),
    ],
    [2, 'usage: a missing required flag (oclif)', () => run(['proxy', 'p'], home)],
    [
      2,
      'usage: a bad flag value',
      () => run(['proxy', 'p', '--target-uri', 'ftp://127.0.0.1/'], home),
    ],
    [
      2,
      'missing input: no secrets password and no keyring',
      () => run(['secret', 'list'], home, {TOOLGATE_SECRETS_PASSWORD: ''}),
    ],
    [
      69,
      'unavailable: a busy --port',
      () =>
        run(
          [
            'proxy',
            'p',
            '--target-uri',
            'http://127.0.0.1:9',
            '--port',
            String((busy.address() as {port: number}).port),
          ],
          home,
        ),
    ],
    [
      70,
      'internal: the registry store cannot be created',
      async () => {
        const config = join(home, 'bad-storage.yaml')
        await writeFile(
          config,
          'auth: {mode: anonymous}\nstorage: {sqlite: {path: /dev/null/x.db}}\n',
        )
        return run(
          [
            'serve',
            '--config',
            config,
            '--address',
            '127.0.0.1:0',
            '--internal-address',
            '127.0.0.1:0',
          ],
          home,
        )
      },
    ],
    [
      77,
      'permission: a wrong secrets password',
      () =>
        run(['secret', 'get', 'present'], home, {TOOLGATE_SECRETS_PASSWORD: 'a-wrong-password'}),
    ],
    [
      78,
      'configuration: an unknown key in the serve config',
      async () => {
        const config = join(home, 'unknown-key.yaml')
        await writeFile(config, 'auth: {mode: anonymous}\nsurprise: 1\n')
        return run(['serve', '--config', config], home)
      },
    ],
  ]

  for (const [code, what, command] of table) {
    it(`exit ${code}: ${what}`, async () => {
      const r = await command()
      assert.equal(r.code, code, r.stderr)
      if (code === 0) assert.doesNotMatch(r.stderr, /Error/, 'a success prints no error')
      else assert.match(r.stderr, /Error|error/, 'says what went wrong')
    })
  }
})
