import assert from 'node:assert/strict'
import {createRequire} from 'node:module'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {runCli} from '../helpers/proxy-run.ts'
import {startServe, type ServeProcess} from '../helpers/serve-process.ts'
import {mcpClient, runForeground, textOf} from '../helpers/workload.ts'

/**
 * Publish → discover → run: a real `toolgate serve` holds entries whose npm package is installed
 * locally (server-everything, so `npx -y pkg@version` needs no network), and `toolgate run
 * --from-registry` resolves, checks the declared variables, starts and fronts it. These run with
 * --no-sandbox: the sandbox installs the package into its cache from the npm registry, which tests
 * do not reach (run-sandbox.test.ts runs a registry entry sandboxed, from a loopback npm registry).
 */
const EVERYTHING_VERSION = (
  createRequire(import.meta.url)('@modelcontextprotocol/server-everything/package.json') as {
    version: string
  }
).version

function entry(name: string, extra: Record<string, unknown> = {}, env: unknown[] = []) {
  return {
    name,
    description: 'server-everything from the local npm install',
    version: EVERYTHING_VERSION,
    packages: [
      {
        registryType: 'npm',
        identifier: '@modelcontextprotocol/server-everything',
        version: EVERYTHING_VERSION,
        transport: {type: 'stdio'},
        packageArguments: [{type: 'positional', value: 'stdio'}],
        environmentVariables: env,
      },
    ],
    ...extra,
  }
}

describe('toolgate run --from-registry', () => {
  let home: string
  let serve: ServeProcess
  let base: string

  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'toolgate-run-registry-'))
    const servers = [
      entry('io.github.test/everything', {}, [{name: 'GREETING_MODE', default: 'formal'}]),
      entry('io.github.test/needs-key', {}, [
        {
          name: 'WEATHER_API_KEY',
          description: 'API key for the forecast provider',
          isRequired: true,
          isSecret: true,
        },
      ]),
      {
        name: 'io.github.test/docker-only',
        description: 'no runnable package',
        version: '1.0.0',
        packages: [
          {registryType: 'nuget', identifier: 'X', version: '1.0.0', transport: {type: 'stdio'}},
        ],
      },
    ]
    await writeFile(
      join(home, 'registry.json'),
      JSON.stringify({
        version: '1.0.0',
        meta: {last_updated: '2026-01-01T00:00:00Z'},
        data: {servers},
      }),
    )
    await writeFile(
      join(home, 'serve.yaml'),
      'sources:\n  - name: local\n    file: {path: ./registry.json}\nregistries:\n  - name: default\n    sources: [local]\nauth:\n  mode: anonymous\n',
    )
    serve = await startServe(['--config', join(home, 'serve.yaml')], {dir: home})
    base = `${serve.url}/registry/default`
  })

  after(async () => {
    await serve?.stop()
    await rm(home, {recursive: true, force: true})
  })

  it('starts the npm package of a registry entry and answers through the proxy', async () => {
    const w = await runForeground(
      'from-reg',
      ['--no-sandbox', '--from-registry', base, `io.github.test/everything@${EVERYTHING_VERSION}`],
      [],
      home,
    )
    try {
      const c = await mcpClient(w.url)
      assert.equal(
        textOf(await c.callTool({name: 'echo', arguments: {message: 'published'}})),
        'Echo: published',
      )
      await c.close()
    } finally {
      await w.stop()
    }
  })

  it('resolves the latest version when none is given', async () => {
    const r = runCli(
      [
        'run',
        'latest-one',
        '--json',
        '--no-sandbox',
        '--from-registry',
        base,
        'io.github.test/everything',
      ],
      home,
    )
    assert.equal(await r.exited, 0, r.stderr())
    const {url} = JSON.parse(r.stdout()) as {url: string}
    const c = await mcpClient(url)
    assert.equal(textOf(await c.callTool({name: 'echo', arguments: {message: 'x'}})), 'Echo: x')
    await c.close()
    assert.equal(await runCli(['stop', 'latest-one'], home).exited, 0)
  })

  it('names a required variable that is missing, and starts once it is given', async () => {
    const r = runCli(
      ['run', 'keyed', '--no-sandbox', '--from-registry', base, 'io.github.test/needs-key'],
      home,
    )
    assert.equal(await r.exited, 2)
    assert.match(
      r.stderr(),
      /WEATHER_API_KEY \(API key for the forecast provider\): --secret <name>,target=WEATHER_API_KEY/,
    )
    const ok = runCli(
      [
        'run',
        'keyed',
        '-e',
        'WEATHER_API_KEY=k',
        '--no-sandbox',
        '--from-registry',
        base,
        'io.github.test/needs-key',
      ],
      home,
    )
    assert.equal(await ok.exited, 0, ok.stderr())
    assert.equal(await runCli(['stop', 'keyed'], home).exited, 0)
  })

  it('says what is wrong with an unknown server, an unrunnable entry and a bad reference', async () => {
    const cases: Array<[string[], number, RegExp]> = [
      [['io.github.test/nope'], 1, /io.github.test\/nope@latest is not in the registry/],
      [['io.github.test/docker-only'], 2, /no package toolgate can run .* it offers nuget\/stdio/],
      [['not a name'], 2, /is not <namespace\/name>\[@version\]/],
    ]
    for (const [ref, code, message] of cases) {
      const r = runCli(['run', 'bad', '--no-sandbox', '--from-registry', base, ...ref], home)
      assert.equal(await r.exited, code, r.stderr())
      assert.match(r.stderr(), message)
    }
  })
})
