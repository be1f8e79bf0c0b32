/**
 * `toolgate serve` refuses bad configurations before listening: exit non-zero, the message names
 * the field (or file), nothing printed on stdout. Runs the real command.
 */
import {describe, test} from 'node:test'
import assert from 'node:assert/strict'
import {mkdirSync, rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {FIXTURES, runServe, startServe, tempDir, writeConfig} from '../helpers/serve-process.ts'

const oauth = {
  resourceUrl: 'https://registry.example.com',
  providers: [{name: 'sso', issuerUrl: 'https://auth.example.com', audience: 'api://registry'}],
}

const CASES: [string, string, string, RegExp][] = [
  [
    'an unknown key',
    'serve.yaml',
    'auth:\n  mode: anonymous\nlisten: ":80"\n',
    /listen: unknown key/,
  ],
  [
    'a wrong type',
    'serve.json',
    JSON.stringify({auth: {mode: 'anonymous'}, sources: {name: 'x'}}),
    /sources: must be a list/,
  ],
  [
    'a provider without issuerUrl',
    'serve.json',
    JSON.stringify({auth: {oauth: {...oauth, providers: [{name: 'sso', audience: 'a'}]}}}),
    /auth\.oauth\.providers\[0\]\.issuerUrl: is required/,
  ],
  [
    'an http issuer on a public host',
    'serve.json',
    JSON.stringify({
      auth: {
        oauth: {
          ...oauth,
          providers: [{name: 'sso', issuerUrl: 'http://auth.example.com', audience: 'a'}],
        },
      },
    }),
    /auth\.oauth\.providers\[0\]\.issuerUrl: must use https/,
  ],
  [
    'oauth without providers',
    'serve.yaml',
    'auth:\n  oauth:\n    resourceUrl: https://r.example.com\n',
    /auth\.oauth\.providers: is required/,
  ],
  [
    'an unreadable clientSecretFile',
    'serve.json',
    JSON.stringify({
      auth: {
        oauth: {
          ...oauth,
          providers: [{...oauth.providers[0], clientId: 'c', clientSecretFile: './no-such-secret'}],
        },
      },
    }),
    /auth\.oauth\.providers\[0\]\.clientSecretFile: provider "sso": cannot read .*no-such-secret/,
  ],
  [
    'a PostgreSQL URL carrying a password',
    'serve.yaml',
    'storage:\n  postgres: {url: "postgres://registry:hunter2@127.0.0.1/registry"}\nauth: {mode: anonymous}\n',
    /storage\.postgres\.url: must not contain a password/,
  ],
  [
    'an unknown PostgreSQL sslmode',
    'serve.yaml',
    'storage:\n  postgres: {host: db, sslmode: maybe}\nauth: {mode: anonymous}\n',
    /storage\.postgres\.sslmode: must be one of disable, prefer, require, verify-ca, verify-full/,
  ],
  ['YAML that does not parse', 'serve.yaml', 'auth: [unclosed\n', /serve\.yaml: not valid YAML/],
]

describe('invalid configuration files', {concurrency: 3}, () => {
  for (const [name, file, text, expected] of CASES) {
    test(`exits non-zero for ${name}, naming the field`, async (t) => {
      const dir = tempDir()
      t.after(() => rmSync(dir, {recursive: true, force: true}))
      const r = await runServe(['--config', writeConfig(dir, file, text)], {dir})
      assert.equal(r.code, 78, r.stderr)
      assert.match(r.stderr, expected)
      assert.equal(r.stdout, '')
    })
  }

  test('exits non-zero naming the file when a source file is not JSON', async (t) => {
    const dir = tempDir()
    t.after(() => rmSync(dir, {recursive: true, force: true}))
    writeFileSync(join(dir, 'servers.json'), 'this is not json')
    const config = writeConfig(
      dir,
      'serve.yaml',
      'sources:\n  - name: local\n    file: {path: ./servers.json}\nauth: {mode: anonymous}\n',
    )
    const r = await runServe(['--config', config], {dir})
    assert.notEqual(r.code, 0)
    assert.match(r.stderr, /servers\.json/)
    assert.match(r.stderr, /local/)
    assert.equal(r.stdout, '')
  })

  test('without any configuration it refuses to start and says how to configure or run anonymously', async () => {
    const r = await runServe([])
    assert.equal(r.code, 78)
    assert.match(r.stderr, /--config/)
    assert.match(r.stderr, /--auth-mode anonymous/)
  })

  test('a bad --address is a usage error', async () => {
    const r = await runServe(['--auth-mode', 'anonymous', '--address', 'not-an-address'])
    assert.equal(r.code, 2)
    assert.match(r.stderr, /--address: "not-an-address" is not a listen address/)
  })

  test('a busy port is an error, not a silent switch', async (t) => {
    const s = await startServe(['--auth-mode', 'anonymous'])
    t.after(() => s.stop())
    const r = await runServe(['--auth-mode', 'anonymous', '--address', new URL(s.url).host])
    assert.equal(r.code, 69)
    assert.match(r.stderr, /--address: address .* is already in use/)
  })
})

describe('configuration that starts', {concurrency: 2}, () => {
  test('--auth-mode anonymous overrides an oauth file, logs a loud warning and prints JSON with --json', async (t) => {
    const dir = tempDir()
    t.after(() => rmSync(dir, {recursive: true, force: true}))
    const config = writeConfig(dir, 'serve.json', JSON.stringify({auth: {mode: 'oauth', oauth}}))
    const s = await startServe(['--config', config, '--auth-mode', 'anonymous', '--json'], {dir})
    t.after(() => s.stop())
    const line = JSON.parse(s.stdout().split('\n')[0]!) as Record<string, string>
    assert.deepEqual(Object.keys(line).sort(), [
      'address',
      'allInterfaces',
      'authMode',
      'event',
      'internalAddress',
      'internalUrl',
      'url',
    ])
    assert.equal(line.authMode, 'anonymous')
    assert.match(line.url!, /^http:\/\/127\.0\.0\.1:\d+$/)
    assert.match(s.stderr(), /ANONYMOUS MODE/)
    const r = await fetch(s.url + '/registry/default/v0.1/servers')
    assert.deepEqual(await r.json(), {servers: [], metadata: {count: 0}})
  })

  test('without --config, $XDG_CONFIG_HOME/toolgate/serve.yaml is used and storage defaults under XDG data', async (t) => {
    const dir = tempDir()
    t.after(() => rmSync(dir, {recursive: true, force: true}))
    mkdirSync(join(dir, 'config', 'toolgate'), {recursive: true})
    writeFileSync(
      join(dir, 'config', 'toolgate', 'serve.yaml'),
      `sources:\n  - name: fixture\n    file: {path: ${join(FIXTURES, 'registry.json')}}\nauth: {mode: anonymous}\n`,
    )
    const s = await startServe([], {dir})
    t.after(() => s.stop())
    const r = await fetch(s.url + '/registry/default/v0.1/servers')
    assert.equal(((await r.json()) as {metadata: {count: number}}).metadata.count, 11)
    assert.match(
      s.stderr(),
      new RegExp(
        // One database per config file (docs/serve.md, "Default database").
        `path=${join(dir, 'data', 'toolgate', 'registry-').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}[0-9a-f]{16}\\.db`,
      ),
    )
  })
})
