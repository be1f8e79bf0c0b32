import {after, describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {existsSync, readdirSync, rmSync} from 'node:fs'
import {join} from 'node:path'
import {defaultRegistryDbPath} from '../../src/lib/config/serve-config.ts'
import {startServe, tempDir, writeConfig} from '../helpers/serve-process.ts'

/**
 * `serve` defaults a new user relies on without reading (issue 18): two configs never share the
 * default database, and the log says the address actually bound.
 */
const dirs: string[] = []
after(() => {
  for (const d of dirs) rmSync(d, {recursive: true, force: true})
})
function dir(): string {
  const d = tempDir()
  dirs.push(d)
  return d
}

const registryJson = (name: string) =>
  JSON.stringify([
    {
      name: `io.example/${name}`,
      description: `the ${name} server`,
      version: '1.0.0',
    },
  ])

function configFor(d: string, name: string): string {
  writeConfig(d, `${name}.json`, registryJson(name))
  return writeConfig(
    d,
    `${name}.yaml`,
    `sources:\n  - name: s\n    file: {path: ./${name}.json}\nregistries:\n  - name: default\n    sources: [s]\nauth: {mode: anonymous}\n`,
  )
}

describe('serve defaults', () => {
  it('two serve processes with different configs use different default databases', async () => {
    const home = dir()
    const a = await startServe(['--config', configFor(home, 'alpha')], {dir: home})
    const b = await startServe(['--config', configFor(home, 'beta')], {dir: home})
    try {
      const names = async (url: string) => {
        const res = await fetch(`${url}/registry/default/v0.1/servers`)
        const body = (await res.json()) as {servers: Array<{server: {name: string}}>}
        return body.servers.map((s) => s.server.name)
      }
      // Both processes are up at once and each serves its own config's data.
      assert.deepEqual(await names(a.url), ['io.example/alpha'])
      assert.deepEqual(await names(b.url), ['io.example/beta'])
      const dbs = readdirSync(join(home, 'data', 'toolgate')).filter((f) =>
        /^registry-.*\.db$/.test(f),
      )
      assert.equal(dbs.length, 2, dbs.join(', '))
      const pathA = /storage ready .*path=(\S+)/.exec(a.stderr())?.[1]
      const pathB = /storage ready .*path=(\S+)/.exec(b.stderr())?.[1]
      assert.ok(pathA && pathB && pathA !== pathB, `${pathA} vs ${pathB}`)
      assert.ok(existsSync(pathA!) && existsSync(pathB!))
    } finally {
      await a.stop()
      await b.stop()
    }
  })

  it('the default path is stable per config file and registry.db without one', () => {
    const one = defaultRegistryDbPath('/data', '/etc/toolgate/a.yaml')
    assert.equal(one, defaultRegistryDbPath('/data', '/etc/toolgate/../toolgate/a.yaml'))
    assert.notEqual(one, defaultRegistryDbPath('/data', '/etc/toolgate/b.yaml'))
    assert.match(one, /^\/data\/registry-[0-9a-f]{16}\.db$/)
    assert.equal(defaultRegistryDbPath('/data'), '/data/registry.db')
  })

  it('logs the address actually bound: every interface for :0, loopback for 127.0.0.1:0', async () => {
    const home = dir()
    const config = configFor(home, 'gamma')
    const all = await startServe(['--config', config, '--address', ':0'], {dir: home})
    try {
      const line = all
        .stderr()
        .split('\n')
        .find((l) => l.includes('main server listening'))
      assert.ok(line, all.stderr())
      assert.match(line, /address="?(\[::\]|0\.0\.0\.0):\d+"? all_interfaces=true/)
      assert.doesNotMatch(line, /address=127\.0\.0\.1/)
    } finally {
      await all.stop()
    }
    const local = await startServe(['--config', config, '--json'], {dir: home})
    try {
      const listening = JSON.parse(local.stdout().split('\n')[0]!) as Record<string, unknown>
      assert.equal(listening.event, 'listening')
      assert.match(String(listening.address), /^127\.0\.0\.1:\d+$/)
      const log = local
        .stderr()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l.msg === 'main server listening')
      assert.equal(log?.all_interfaces, false)
      assert.match(String(log?.address), /^127\.0\.0\.1:\d+$/)
    } finally {
      await local.stop()
    }
  })
})
