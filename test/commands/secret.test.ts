import {after, before, describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readFile, stat, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {
  freshHome,
  keyringToolsAvailable,
  runCli,
  type CliResult,
} from '../helpers/keyring-session.ts'
import {needs} from '../helpers/component.ts'

/**
 * `toolgate secret …` end to end, one process per command as a user runs it: the real OS keyring
 * (GNOME Keyring in a private D-Bus session) on a "desktop", no session bus + TOOLGATE_SECRETS_PASSWORD
 * in a "CI shell", and the encrypted file on disk. Exit codes come from the error table (errors.ts).
 */
const PASSWORD = 'ci-master-password'
const ENV_PW = {TOOLGATE_SECRETS_PASSWORD: PASSWORD}
const homes: Array<() => Promise<void>> = []
after(async () => {
  for (const cleanup of homes) await cleanup()
})
async function home(): Promise<string> {
  const h = await freshHome()
  homes.push(h.cleanup)
  return h.home
}
const secretsFile = (h: string) => join(h, '.local', 'share', 'toolgate', 'secrets.enc')
const ok = (r: CliResult, what: string) => assert.equal(r.code, 0, `${what} failed: ${r.stderr}`)

const hasKeyring = keyringToolsAvailable()

describe(
  'secret commands with the real OS keyring',
  {
    skip: needs(
      'the OS keyring',
      !hasKeyring && 'dbus-run-session / gnome-keyring-daemon not installed',
    ),
  },
  () => {
    let h: string
    before(async () => {
      h = await home()
    })

    it('setup stores the master password in the keyring', async () => {
      const r = await runCli(['secret', 'setup', '--json'], {home: h, bus: 'keyring', env: ENV_PW})
      ok(r, 'setup')
      const result = JSON.parse(r.stdout)
      assert.equal(result.provider, 'encrypted')
      assert.equal(result.store, 'created')
      assert.equal(result.keyring, true)
    })

    it('set and get in new processes need no TOOLGATE_SECRETS_PASSWORD (the keyring supplies it)', async () => {
      ok(
        await runCli(['secret', 'set', 'desk-token'], {
          home: h,
          bus: 'keyring',
          stdin: 'desk-value\n',
        }),
        'set',
      )
      const r = await runCli(['secret', 'get', 'desk-token'], {home: h, bus: 'keyring'})
      ok(r, 'get')
      assert.equal(r.stdout, 'desk-value\n')
      assert.doesNotMatch(r.stderr, /keyring unavailable/i)
    })

    it('without the keyring session and without a password the same store cannot be opened', async () => {
      const r = await runCli(['secret', 'get', 'desk-token'], {home: h, bus: 'none'})
      assert.equal(r.code, 2)
      assert.match(r.stderr, /TOOLGATE_SECRETS_PASSWORD is not set/)
    })

    it('the password from the keyring and TOOLGATE_SECRETS_PASSWORD open the same file', async () => {
      const r = await runCli(['secret', 'get', 'desk-token'], {home: h, bus: 'none', env: ENV_PW})
      ok(r, 'get with env password')
      assert.equal(r.stdout, 'desk-value\n')
    })

    it('setup with a different password for an existing store is refused and saves nothing', async () => {
      const before = await readFile(secretsFile(h))
      const r = await runCli(['secret', 'setup'], {
        home: h,
        bus: 'keyring',
        env: {TOOLGATE_SECRETS_PASSWORD: 'another-password'},
      })
      assert.equal(r.code, 77)
      assert.match(r.stderr, /wrong password/)
      assert.deepEqual(await readFile(secretsFile(h)), before)
      ok(
        await runCli(['secret', 'get', 'desk-token'], {home: h, bus: 'keyring'}),
        'get after refused setup',
      )
    })
  },
)

describe('secret commands in a CI shell (no session bus)', () => {
  let h: string
  before(async () => {
    h = await home()
  })

  it('uses TOOLGATE_SECRETS_PASSWORD without a keyring warning (setting it is the answer)', async () => {
    const set = await runCli(['secret', 'set', 'ci-token'], {
      home: h,
      bus: 'none',
      env: ENV_PW,
      stdin: 'ci-value',
    })
    ok(set, 'set')
    assert.doesNotMatch(set.stderr, /keyring|WARN/i)
    const get = await runCli(['secret', 'get', 'ci-token'], {home: h, bus: 'none', env: ENV_PW})
    ok(get, 'get')
    assert.equal(get.stdout, 'ci-value\n')
    assert.equal(get.stderr, '')
    // --debug still tells where the password came from and why.
    const dbg = await runCli(['secret', 'get', 'ci-token', '--debug'], {
      home: h,
      bus: 'none',
      env: ENV_PW,
    })
    assert.match(dbg.stderr, /using TOOLGATE_SECRETS_PASSWORD/)
  })

  it('refuses a TOOLGATE_SECRETS_PASSWORD shorter than 8 characters, as the prompt does', async () => {
    for (const args of [
      ['secret', 'set', 'short-pw'],
      ['secret', 'setup'],
    ]) {
      const r = await runCli(args, {
        home: await home(),
        bus: 'none',
        env: {TOOLGATE_SECRETS_PASSWORD: 'seven77'},
        stdin: 'v',
      })
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
      assert.match(r.stderr, /TOOLGATE_SECRETS_PASSWORD must be at least 8 characters long/)
      assert.doesNotMatch(r.stderr, /seven77/)
    }
    // Exactly 8 is enough.
    const r = await runCli(['secret', 'set', 'eight-pw'], {
      home: await home(),
      bus: 'none',
      env: {TOOLGATE_SECRETS_PASSWORD: 'eight888'},
      stdin: 'v',
    })
    ok(r, 'set with an 8-character password')
  })

  it('without keyring or password: a clear error and exit 2 (missing input), at once', async () => {
    const r = await runCli(['secret', 'set', 'x'], {home: await home(), bus: 'none', stdin: 'v'})
    assert.equal(r.code, 2)
    assert.match(r.stderr, /no secrets password.*TOOLGATE_SECRETS_PASSWORD is not set/)
  })

  it('writes the file 0600 in a 0700 directory, with no plaintext in it', async () => {
    const file = secretsFile(h)
    assert.equal((await stat(file)).mode & 0o777, 0o600)
    assert.equal((await stat(join(file, '..'))).mode & 0o777, 0o700)
    const bytes = await readFile(file)
    for (const needle of ['ci-value', 'ci-token', PASSWORD])
      assert.equal(bytes.includes(Buffer.from(needle)), false, needle)
  })

  it('get --json prints {name, value}; list prints names only', async () => {
    const get = await runCli(['secret', 'get', 'ci-token', '--json'], {
      home: h,
      bus: 'none',
      env: ENV_PW,
    })
    assert.deepEqual(JSON.parse(get.stdout), {event: 'secret', name: 'ci-token', value: 'ci-value'})
    const list = await runCli(['secret', 'list', '--json'], {home: h, bus: 'none', env: ENV_PW})
    assert.deepEqual(JSON.parse(list.stdout), {event: 'secrets', names: ['ci-token']})
    const plain = await runCli(['secret', 'list'], {home: h, bus: 'none', env: ENV_PW})
    assert.equal(plain.stdout, 'ci-token\n')
  })

  it('strips exactly one trailing newline from stdin', async () => {
    ok(
      await runCli(['secret', 'set', 'multi'], {
        home: h,
        bus: 'none',
        env: ENV_PW,
        stdin: 'line1\nline2\n\n',
      }),
      'set',
    )
    const r = await runCli(['secret', 'get', 'multi', '--json'], {
      home: h,
      bus: 'none',
      env: ENV_PW,
    })
    assert.equal(JSON.parse(r.stdout).value, 'line1\nline2\n')
  })

  const failures: Array<[string, string[], string | undefined, number, RegExp]> = [
    ['get of a missing secret', ['secret', 'get', 'absent'], undefined, 1, /"absent" not found/],
    [
      'delete of a missing secret',
      ['secret', 'delete', 'absent'],
      undefined,
      1,
      /"absent" not found/,
    ],
    ['an invalid name', ['secret', 'set', 'bad name'], 'v', 2, /invalid secret name/],
    ['an empty value', ['secret', 'set', 'empty'], '\n', 2, /value is empty/],
    [
      'set of a reserved name',
      ['secret', 'set', '__toolgate/oauth/x'],
      'v',
      2,
      /reserved namespace/,
    ],
    [
      'get of a reserved name',
      ['secret', 'get', '__toolgate/oauth/x'],
      undefined,
      2,
      /reserved namespace/,
    ],
    [
      'delete of a reserved name',
      ['secret', 'delete', '__toolgate/oauth/x'],
      undefined,
      2,
      /reserved namespace/,
    ],
  ]
  for (const [label, args, stdin, code, message] of failures) {
    it(`exits ${code} for ${label}`, async () => {
      const r = await runCli(args, {home: h, bus: 'none', env: ENV_PW, stdin})
      assert.equal(r.code, code, r.stderr)
      assert.match(r.stderr, message)
    })
  }

  it('manages reserved names only with --system, and list hides them', async () => {
    ok(
      await runCli(['secret', 'set', '__toolgate/oauth/x', '--system'], {
        home: h,
        bus: 'none',
        env: ENV_PW,
        stdin: 'sys',
      }),
      'set --system',
    )
    const list = await runCli(['secret', 'list', '--json'], {home: h, bus: 'none', env: ENV_PW})
    assert.equal(JSON.parse(list.stdout).names.includes('__toolgate/oauth/x'), false)
    const all = await runCli(['secret', 'list', '--json', '--system'], {
      home: h,
      bus: 'none',
      env: ENV_PW,
    })
    assert.equal(JSON.parse(all.stdout).names.includes('__toolgate/oauth/x'), true)
    ok(
      await runCli(['secret', 'delete', '__toolgate/oauth/x', '--system'], {
        home: h,
        bus: 'none',
        env: ENV_PW,
      }),
      'delete --system',
    )
  })

  it('deletes a secret', async () => {
    ok(await runCli(['secret', 'delete', 'multi'], {home: h, bus: 'none', env: ENV_PW}), 'delete')
    const r = await runCli(['secret', 'get', 'multi'], {home: h, bus: 'none', env: ENV_PW})
    assert.equal(r.code, 1)
  })

  it('never takes the value from argv', async () => {
    const r = await runCli(['secret', 'set', 'argv-name', 'argv-value'], {
      home: h,
      bus: 'none',
      env: ENV_PW,
      stdin: 'v',
    })
    assert.notEqual(r.code, 0)
  })
})

describe('damaged file and wrong password', () => {
  let h: string
  before(async () => {
    h = await home()
    ok(
      await runCli(['secret', 'set', 'keep'], {
        home: h,
        bus: 'none',
        env: ENV_PW,
        stdin: 'kept-value',
      }),
      'set',
    )
  })

  it('a wrong password is a clear error (exit 77) and the file is untouched, even by set', async () => {
    const file = secretsFile(h)
    const before = {bytes: await readFile(file), mtime: (await stat(file)).mtimeMs}
    const env = {TOOLGATE_SECRETS_PASSWORD: 'not-the-password'}
    const get = await runCli(['secret', 'get', 'keep'], {home: h, bus: 'none', env})
    assert.equal(get.code, 77)
    assert.match(get.stderr, /wrong password/)
    const set = await runCli(['secret', 'set', 'other'], {home: h, bus: 'none', env, stdin: 'v'})
    assert.equal(set.code, 77)
    assert.deepEqual(await readFile(file), before.bytes)
    assert.equal((await stat(file)).mtimeMs, before.mtime)
  })

  it('a flipped byte is an integrity error (exit 78) and the file is untouched, even by set', async () => {
    const file = secretsFile(h)
    const bytes = await readFile(file)
    bytes[bytes.length - 20] = (bytes[bytes.length - 20] as number) ^ 0x40
    await writeFile(file, bytes, {mode: 0o600})
    const mtime = (await stat(file)).mtimeMs
    const get = await runCli(['secret', 'get', 'keep'], {home: h, bus: 'none', env: ENV_PW})
    assert.equal(get.code, 78)
    assert.match(get.stderr, /damaged \(integrity check failed\)/)
    const set = await runCli(['secret', 'set', 'other'], {
      home: h,
      bus: 'none',
      env: ENV_PW,
      stdin: 'v',
    })
    assert.equal(set.code, 78)
    assert.deepEqual(await readFile(file), bytes)
    assert.equal((await stat(file)).mtimeMs, mtime)
    assert.doesNotMatch(get.stderr + set.stderr, /kept-value/)
  })
})

describe('concurrent writers', () => {
  it(
    '20 concurrent `secret set` processes: all 20 secrets are present afterwards',
    {timeout: 300_000},
    async () => {
      const h = await home()
      const results = await Promise.all(
        Array.from({length: 20}, (_, i) =>
          runCli(['secret', 'set', `parallel-${i}`], {
            home: h,
            bus: 'none',
            env: ENV_PW,
            stdin: `value-${i}`,
            timeoutMs: 240_000,
          }),
        ),
      )
      results.forEach((r, i) => ok(r, `set parallel-${i}`))
      const list = await runCli(['secret', 'list', '--json'], {home: h, bus: 'none', env: ENV_PW})
      const expected = Array.from({length: 20}, (_, i) => `parallel-${i}`).sort()
      assert.deepEqual(JSON.parse(list.stdout).names, expected)
      const lockLeft = await stat(secretsFile(h) + '.lock').catch(() => undefined)
      assert.equal(lockLeft, undefined)
    },
  )
})

describe('environment provider', () => {
  it('setup --provider environment makes get read TOOLGATE_SECRET_<NAME> and set refuse (exit 77)', async () => {
    const h = await home()
    ok(
      await runCli(['secret', 'setup', '--provider', 'environment'], {home: h, bus: 'none'}),
      'setup',
    )
    const env = {TOOLGATE_SECRET_GITHUB_TOKEN: 'from-env'}
    const get = await runCli(['secret', 'get', 'github-token'], {home: h, bus: 'none', env})
    ok(get, 'get')
    assert.equal(get.stdout, 'from-env\n')
    const set = await runCli(['secret', 'set', 'github-token'], {
      home: h,
      bus: 'none',
      env,
      stdin: 'v',
    })
    assert.equal(set.code, 77)
    assert.match(set.stderr, /read-only/)
    assert.equal((await stat(join(h, '.config', 'toolgate', 'secrets.json'))).mode & 0o777, 0o600)
  })
})
