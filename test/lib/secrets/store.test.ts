import {after, describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {mkdtemp, readFile, rm, stat} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {isToolgateError, type ErrorCode} from '../../../src/lib/errors.ts'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {xdgDirs} from '../../../src/lib/config/xdg.ts'
import {
  environmentVariableFor,
  openSecretStore,
  systemSecretName,
  validateSecretName,
} from '../../../src/lib/secrets/index.ts'

const dirs: string[] = []
after(async () => {
  for (const d of dirs) await rm(d, {recursive: true, force: true})
})

async function encryptedStore(
  env: Record<string, string> = {TOOLGATE_SECRETS_PASSWORD: 'test-password'},
) {
  const home = await mkdtemp(join(tmpdir(), 'toolgate-store-'))
  dirs.push(home)
  const fullEnv = {HOME: home, ...env}
  const logger = createMemoryLogger()
  // keyring: false — this file tests the store itself; the real keyring is exercised by the CLI tests.
  const store = await openSecretStore({
    env: fullEnv,
    keyring: false,
    logger,
    kdf: {log2N: 10, r: 8, p: 1},
  })
  return {store, home, logger, paths: xdgDirs(fullEnv)}
}

describe('secret names', () => {
  const cases: Array<[string, string, ErrorCode | 'ok', boolean?]> = [
    ['plain', 'github-token', 'ok'],
    ['dots and underscores', 'svc.api_key-2', 'ok'],
    ['digit first', '1password', 'ok'],
    ['128 characters', 'a'.repeat(128), 'ok'],
    ['129 characters', 'a'.repeat(129), 'ERR_USAGE'],
    ['a space', 'bad name', 'ERR_USAGE'],
    ['a leading dash', '-x', 'ERR_USAGE'],
    ['a slash', 'a/b', 'ERR_USAGE'],
    ['non-ASCII', 'tökén', 'ERR_USAGE'],
    ['a newline', 'a\nb', 'ERR_USAGE'],
    ['empty', '', 'ERR_USAGE'],
    ['reserved without system', '__toolgate/oauth/x', 'ERR_SECRET_RESERVED'],
    ['reserved with system', '__toolgate/oauth/x', 'ok', true],
    ['a leading underscore (could shadow the reserved space)', '_x', 'ERR_USAGE'],
  ]
  for (const [label, name, expected, system] of cases) {
    it(`${expected === 'ok' ? 'accepts' : 'refuses'} a name with ${label}`, () => {
      if (expected === 'ok') validateSecretName(name, {system})
      else
        assert.throws(
          () => validateSecretName(name, {system}),
          (err) => isToolgateError(err, expected),
        )
    })
  }

  it('builds reserved names that always validate, whatever the parts contain', () => {
    const name = systemSecretName('oauth', 'https://auth.example.com/realms/a b', 'refresh-token')
    assert.ok(name.startsWith('__toolgate/oauth/'))
    validateSecretName(name, {system: true})
  })

  const envCases: Array<[string, string]> = [
    ['github-token', 'TOOLGATE_SECRET_GITHUB_TOKEN'],
    ['svc.api_key', 'TOOLGATE_SECRET_SVC_API_KEY'],
    ['Mixed9', 'TOOLGATE_SECRET_MIXED9'],
  ]
  for (const [name, variable] of envCases) {
    it(`maps ${name} to the environment variable ${variable}`, () => {
      assert.equal(environmentVariableFor(name), variable)
    })
  }
})

describe('encrypted store (in process)', () => {
  it('sets, gets, lists and deletes', async () => {
    const {store} = await encryptedStore()
    await store.set('b', 'two')
    await store.set('a', 'one')
    assert.equal(await store.get('a'), 'one')
    assert.deepEqual(await store.list(), ['a', 'b'])
    assert.equal(await store.delete('a'), true)
    assert.equal(await store.delete('a'), false)
    assert.equal(await store.get('a'), undefined)
  })

  it('reports a missing secret as ERR_SECRET_NOT_FOUND naming it', async () => {
    const {store} = await encryptedStore()
    await assert.rejects(
      store.require('nope'),
      (err) => isToolgateError(err, 'ERR_SECRET_NOT_FOUND') && /"nope"/.test(err.message),
    )
  })

  it('hides reserved names from list and refuses them without system', async () => {
    const {store} = await encryptedStore()
    const sys = systemSecretName('oauth', 'srv', 'refresh-token')
    await store.set('user-visible', 'v')
    await store.set(sys, 'refresh-value', {system: true})
    assert.deepEqual(await store.list(), ['user-visible'])
    assert.deepEqual(await store.list({system: true}), [sys, 'user-visible'])
    await assert.rejects(store.get(sys), (err) => isToolgateError(err, 'ERR_SECRET_RESERVED'))
    await assert.rejects(store.set(sys, 'x'), (err) => isToolgateError(err, 'ERR_SECRET_RESERVED'))
    await assert.rejects(store.delete(sys), (err) => isToolgateError(err, 'ERR_SECRET_RESERVED'))
    assert.equal(await store.get(sys, {system: true}), 'refresh-value')
  })

  it('writes the file 0600 in a 0700 directory', async () => {
    const {store} = await encryptedStore()
    await store.set('k', 'v')
    assert.equal((await stat(store.file as string)).mode & 0o777, 0o600)
    assert.equal((await stat(join(store.file as string, '..'))).mode & 0o777, 0o700)
  })

  it('refuses an empty value', async () => {
    const {store} = await encryptedStore()
    await assert.rejects(store.set('k', ''), (err) => isToolgateError(err, 'ERR_USAGE'))
  })

  it('fails with ERR_INPUT_REQUIRED when there is neither keyring nor password, and writes nothing', async () => {
    const {store} = await encryptedStore({})
    await assert.rejects(store.set('k', 'v'), (err) => isToolgateError(err, 'ERR_INPUT_REQUIRED'))
    await assert.rejects(stat(store.file as string), {code: 'ENOENT'})
  })

  it('never puts a secret value into a log line', async () => {
    const {store, logger} = await encryptedStore()
    await store.set('k', 'LOG-CANARY-VALUE')
    await store.get('k')
    assert.equal(
      logger.lines.some((l) => l.includes('LOG-CANARY-VALUE') || l.includes('test-password')),
      false,
    )
  })

  it('keeps the provider choice from the config file', async () => {
    const {paths} = await encryptedStore()
    const {writeProviderChoice} = await import('../../../src/lib/secrets/provider-config.ts')
    await writeProviderChoice(paths.config, 'environment')
    assert.equal(
      JSON.parse(await readFile(join(paths.config, 'secrets.json'), 'utf8')).provider,
      'environment',
    )
    const store = await openSecretStore({env: {}, paths, keyring: false})
    assert.equal(store.provider, 'environment')
  })
})

describe('environment store', () => {
  const env = {
    TOOLGATE_SECRET_GITHUB_TOKEN: 'gh-value',
    TOOLGATE_SECRET_OTHER: 'o',
    TOOLGATE_SECRETS_PASSWORD: 'not-a-secret-name',
  }

  it('reads TOOLGATE_SECRET_<NAME>', async () => {
    const store = await openSecretStore({env, provider: 'environment'})
    assert.equal(await store.get('github-token'), 'gh-value')
    assert.equal(await store.get('absent'), undefined)
  })

  it('lists the variables by their suffix, not TOOLGATE_SECRETS_PASSWORD', async () => {
    const store = await openSecretStore({env, provider: 'environment'})
    assert.deepEqual(await store.list(), ['GITHUB_TOKEN', 'OTHER'])
  })

  it('is read-only', async () => {
    const store = await openSecretStore({env, provider: 'environment'})
    assert.equal(store.writable, false)
    await assert.rejects(store.set('x', 'y'), (err) => isToolgateError(err, 'ERR_SECRET_READ_ONLY'))
    await assert.rejects(store.delete('x'), (err) => isToolgateError(err, 'ERR_SECRET_READ_ONLY'))
    assert.throws(
      () => store.assertWritable('x'),
      (err) => isToolgateError(err, 'ERR_SECRET_READ_ONLY'),
    )
  })

  it('rejects an unknown TOOLGATE_SECRETS_PROVIDER naming the variable', async () => {
    await assert.rejects(
      openSecretStore({env: {TOOLGATE_SECRETS_PROVIDER: 'vault', HOME: '/nonexistent'}}),
      (err) =>
        isToolgateError(err, 'ERR_CONFIG_INVALID') && /TOOLGATE_SECRETS_PROVIDER/.test(err.message),
    )
  })
})
