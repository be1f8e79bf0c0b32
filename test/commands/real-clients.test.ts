/**
 * The real MCP clients (dev dependencies: @anthropic-ai/claude-code, @google/gemini-cli,
 * @openai/codex) read the entries `toolgate client add --all-detected` wrote and connect to the
 * workload, over HTTP and through `proxy stdio` (issue 33). `claude mcp list` and `gemini mcp
 * list` connect to each server (no API key needed); `codex mcp list --json` reads the TOML.
 * Claude Code and Gemini CLI ask for different protocol versions: each must get its own from one
 * workload, whichever comes first.
 */
import assert from 'node:assert/strict'
import {execFile} from 'node:child_process'
import {existsSync, mkdirSync, writeFileSync} from 'node:fs'
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {needs} from '../helpers/component.ts'
import {clientEnv, CLIENT_BIN} from '../helpers/client-env.ts'
import {runCli} from '../helpers/proxy-run.ts'
import {EVERYTHING} from '../helpers/workload.ts'

const BIN = CLIENT_BIN
const CLIENTS = ['claude', 'gemini', 'codex']
const missing = CLIENTS.filter((c) => !existsSync(join(BIN, c)))
const skip = needs(
  'claude, gemini and codex (npm dev dependencies)',
  missing.length ? `not installed: ${missing.join(', ')} (npm ci)` : false,
)

describe('real MCP clients connect through the entries toolgate wrote', {skip}, () => {
  let home: string
  const env = () => clientEnv(home)
  async function toolgate(argv: string[]) {
    const run = runCli(argv, home, env())
    const code = await run.exited
    assert.equal(code, 0, `toolgate ${argv.join(' ')}: ${run.stderr()}`)
    return run.stdout()
  }
  /** The client's output: stdout and stderr, or stdout alone (`json`). */
  function client(command: string, args: string[], json = false): Promise<string> {
    return new Promise((done, fail) =>
      execFile(
        join(BIN, command),
        args,
        {cwd: home, env: env(), timeout: 90_000, maxBuffer: 4 * 1024 * 1024},
        (err, stdout, stderr) =>
          err
            ? fail(new Error(`${command} ${args.join(' ')}: ${err.message}\n${stdout}\n${stderr}`))
            : done(json ? stdout : stdout + stderr),
      ),
    )
  }
  const connected = (out: string, name: string) =>
    assert.match(out, new RegExp(`^\\W*${name}: .*Connected\\s*$`, 'm'), out)

  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'toolgate-real-clients-'))
    // Gemini CLI disables every server in a folder the user has not trusted, through its own
    // trust file: trust the test's folder as a user would.
    mkdirSync(join(home, '.gemini'))
    writeFileSync(
      join(home, '.gemini', 'trustedFolders.json'),
      JSON.stringify({[home]: 'TRUST_FOLDER'}),
    )
  })
  after(async () => {
    const run = runCli(['stop', '--all'], home, env())
    await run.exited
    await rm(home, {recursive: true, force: true})
  })

  it('run ev && client add ev --all-detected: every client lists ev as connected (HTTP and stdio)', async () => {
    await toolgate(['run', 'ev', '--', ...EVERYTHING])
    const added = await toolgate(['client', 'add', 'ev', '--all-detected'])
    for (const name of ['Claude Code', 'Gemini CLI', 'Codex'])
      assert.match(added, new RegExp(`${name}: added "ev" \\(http\\)`))
    await toolgate([
      'client',
      'add',
      'ev',
      '--all-detected',
      '--via',
      'stdio',
      '--name',
      'ev-stdio',
    ])

    const claude = await client('claude', ['mcp', 'list'])
    connected(claude, 'ev')
    connected(claude, 'ev-stdio')
    const gemini = await client('gemini', ['mcp', 'list'])
    connected(gemini, 'ev')
    connected(gemini, 'ev-stdio')
    const codex = JSON.parse(await client('codex', ['mcp', 'list', '--json'], true)) as {
      name: string
      enabled: boolean
      transport: {type: string; url?: string; args?: string[]}
    }[]
    const byName = Object.fromEntries(codex.map((s) => [s.name, s]))
    assert.equal(byName.ev?.transport.type, 'streamable_http')
    assert.match(byName.ev!.transport.url!, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
    assert.equal(byName['ev-stdio']?.transport.type, 'stdio')
    assert.deepEqual(byName['ev-stdio']!.transport.args!.slice(-3), ['proxy', 'stdio', 'ev'])
  })

  for (const order of [
    ['claude', 'gemini'],
    ['gemini', 'claude'],
  ] as const) {
    it(`one workload, ${order.join(' first, then ')}: each gets the protocol version it asked for`, async () => {
      const name = `v-${order[0]}`
      await toolgate(['run', name, '--', ...EVERYTHING])
      await toolgate(['client', 'add', name, '--client', 'claude-code,gemini'])
      for (const c of order) connected(await client(c, ['mcp', 'list']), name)
      // Both again, now that the workload has answered the other first.
      for (const c of order) connected(await client(c, ['mcp', 'list']), name)
      const logs = await toolgate(['logs', name, '--proxy'])
      const versions = [
        ...logs.matchAll(/client initialized .*client=(\S+) asked=(\S+) protocolVersion=(\S+)/g),
      ].map((m) => ({client: m[1], asked: m[2], got: m[3]}))
      assert.ok(versions.length >= 4, logs)
      for (const v of versions)
        assert.equal(v.got, v.asked, `${v.client} asked ${v.asked}, got ${v.got}`)
      const asked = new Set(versions.map((v) => v.asked))
      assert.ok(asked.size >= 2, `the two clients ask different versions: ${[...asked].join(', ')}`)
    })
  }
})
