/**
 * `toolgate client` as a user runs it (issue 33): `client add` into a fresh home's client configs,
 * `client list`, `client remove`, `client setup` without a terminal, `rm --unregister`; a
 * workload keeping its port across `stop`/`run`, moving loudly (entries updated) when the port is
 * taken; and a real MCP client connected through `proxy stdio NAME` that keeps working across a
 * `stop` + `run` of its workload. Real commands (bin/dev.js), a real MCP server (UNRULY).
 */
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import {mkdtemp, rm} from 'node:fs/promises'
import {createServer as createHttpServer} from 'node:http'
import {createServer} from 'node:net'
import {tmpdir} from 'node:os'
import {dirname, join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StdioClientTransport} from '@modelcontextprotocol/sdk/client/stdio.js'
import {parse as parseToml} from 'smol-toml'
import {runCli} from '../helpers/proxy-run.ts'
import {textOf, UNRULY} from '../helpers/workload.ts'

async function cli(argv: string[], home: string, env: NodeJS.ProcessEnv = {}) {
  const run = runCli(argv, home, env)
  const code = await run.exited
  return {code, stdout: run.stdout(), stderr: run.stderr()}
}

// Only Node on PATH: which clients count as installed is decided by the folders each test makes.
const ENV = {PATH: dirname(process.execPath), CI: 'true'}

describe('toolgate client', () => {
  let home: string
  const json = (file: string) => JSON.parse(readFileSync(join(home, file), 'utf8'))
  const toml = (file: string) =>
    JSON.parse(JSON.stringify(parseToml(readFileSync(join(home, file), 'utf8'))))
  const started = async (name: string) => {
    const r = await cli(['run', name, '--json', '--', ...UNRULY], home, ENV)
    assert.equal(r.code, 0, r.stderr)
    return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as {url: string; port: number}
  }

  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'toolgate-client-'))
    // Cursor and Codex have run on this machine (their folders exist); Claude Code has a config.
    mkdirSync(join(home, '.cursor'))
    mkdirSync(join(home, '.codex'))
    writeFileSync(join(home, '.claude.json'), '{"numStartups": 3, "mcpServers": {}}\n')
  })
  after(async () => {
    await cli(['stop', '--all'], home, ENV)
    await rm(home, {recursive: true, force: true})
  })

  it('add --all-detected writes every detected client; list shows them; adding again changes nothing', async () => {
    const ev = await started('ev')
    const none = await cli(['client', 'add', 'ev'], home, ENV)
    assert.equal(none.code, 2)
    assert.match(
      none.stderr,
      /--client ID \(repeatable\) or --all-detected \(found here: claude-code, cursor, codex\)/,
    )

    const add = await cli(['client', 'add', 'ev', '--all-detected', '--json'], home, ENV)
    assert.equal(add.code, 0, add.stderr)
    const events = add.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    assert.deepEqual(
      events.map((e) => [e.event, e.client, e.change, e.via]),
      [
        ['client-entry', 'claude-code', 'added', 'http'],
        ['client-entry', 'cursor', 'added', 'http'],
        ['client-entry', 'codex', 'added', 'http'],
      ],
    )
    assert.deepEqual(json('.claude.json'), {
      numStartups: 3,
      mcpServers: {ev: {type: 'http', url: ev.url}},
    })
    assert.deepEqual(json('.cursor/mcp.json'), {mcpServers: {ev: {url: ev.url}}})
    assert.deepEqual(toml('.codex/config.toml'), {mcp_servers: {ev: {url: ev.url}}})

    const again = await cli(['client', 'add', 'ev', '--all-detected'], home, ENV)
    assert.equal(again.code, 0, again.stderr)
    assert.equal(again.stdout.match(/unchanged "ev"/g)?.length, 3, again.stdout)

    const list = await cli(['client', 'list', '--json'], home, ENV)
    const clients = JSON.parse(list.stdout).clients as {
      client: string
      detected: boolean
      entries: {entry: string; workload?: string; toolgate: boolean}[]
    }[]
    const claude = clients.find((c) => c.client === 'claude-code')!
    assert.equal(claude.detected, true)
    assert.deepEqual(claude.entries, [
      {scope: 'user', entry: 'ev', workload: 'ev', via: 'http', toolgate: true},
    ])
    assert.equal(clients.find((c) => c.client === 'vscode')!.detected, false)
  })

  it('--via stdio writes this toolgate with proxy stdio NAME and the state folders it needs', async () => {
    const r = await cli(
      ['client', 'add', 'ev', '--client', 'claude-desktop', '--client', 'gemini', '--via', 'stdio'],
      home,
      ENV,
    )
    assert.equal(r.code, 0, r.stderr)
    const desktop = json('config/Claude/claude_desktop_config.json').mcpServers.ev
    assert.equal(desktop.command, process.execPath)
    assert.deepEqual(desktop.args.slice(-3), ['proxy', 'stdio', 'ev'])
    assert.deepEqual(desktop.env, {
      XDG_CONFIG_HOME: join(home, 'config'),
      XDG_DATA_HOME: join(home, 'data'),
      XDG_STATE_HOME: join(home, 'state'),
    })
    // The entry works as a client starts it: with nothing of this shell's environment.
    const client = new Client({name: 'desktop', version: '1'})
    await client.connect(
      new StdioClientTransport({
        command: desktop.command,
        args: desktop.args,
        env: {...desktop.env, PATH: ENV.PATH, HOME: '/nonexistent'},
        stderr: 'ignore',
      }),
    )
    const answer = await client.callTool({name: 'echo', arguments: {message: 'hi'}})
    assert.equal(textOf(answer), 'echo: hi')
    await client.close()
  })

  it('a client that cannot do HTTP gets stdio, and says so', async () => {
    const r = await cli(
      ['client', 'add', 'ev', '--client', 'claude-desktop', '--via', 'http', '--name', 'ev2'],
      home,
      ENV,
    )
    assert.equal(r.code, 0, r.stderr)
    assert.match(
      r.stdout,
      /Claude Desktop: added "ev2" \(stdio\).*cannot reach an HTTP server; it starts 'toolgate proxy stdio ev' instead/,
    )
  })

  it('refuses a broken config with file and line, and changes the other clients', async () => {
    const broken = '{\n  "mcpServers": {,\n}\n'
    mkdirSync(join(home, '.gemini'), {recursive: true})
    writeFileSync(join(home, '.gemini', 'settings.json'), broken)
    const r = await cli(
      ['client', 'add', 'ev', '--client', 'gemini,cursor', '--name', 'ev3'],
      home,
      ENV,
    )
    assert.equal(r.code, 78, r.stderr)
    assert.match(
      r.stderr,
      /Gemini CLI: not changed: .*\.gemini\/settings\.json:2:18: ValueExpected; fix the file \(nothing was changed\)/,
    )
    assert.equal(readFileSync(join(home, '.gemini', 'settings.json'), 'utf8'), broken)
    assert.match(r.stdout, /Cursor: added "ev3"/)
  })

  it('setup never prompts without a terminal: it needs the workload and the clients', async () => {
    const r = await cli(['client', 'setup'], home, ENV)
    assert.equal(r.code, 2)
    assert.match(r.stderr, /toolgate client setup NAME --client ID\|--all-detected/)
    const ok = await cli(
      ['client', 'setup', 'ev', '--client', 'cursor', '--name', 'ev4'],
      home,
      ENV,
    )
    assert.equal(ok.code, 0, ok.stderr)
    assert.equal(json('.cursor/mcp.json').mcpServers.ev4.url.endsWith('/mcp'), true)
  })

  it('stop + run keeps the port; a taken port moves loudly and the entries follow', async () => {
    const first = JSON.parse(readFileSync(join(home, 'state/toolgate/workloads/ev.json'), 'utf8'))
    assert.equal((await cli(['stop', 'ev'], home, ENV)).code, 0)
    const again = await started('ev')
    assert.equal(again.port, first.port, 'same port after stop + run')

    assert.equal((await cli(['stop', 'ev'], home, ENV)).code, 0)
    const squatter = createServer()
    await new Promise<void>((r) => squatter.listen(first.port, '127.0.0.1', r))
    try {
      const r = await cli(['run', 'ev', '--', ...UNRULY], home, ENV)
      assert.equal(r.code, 0, r.stderr)
      const moved = JSON.parse(readFileSync(join(home, 'state/toolgate/workloads/ev.json'), 'utf8'))
      assert.notEqual(moved.port, first.port)
      assert.match(
        r.stderr,
        new RegExp(
          `Warning: port ${first.port} of the last run is taken; ev now listens on port ${moved.port} \\(5 client entries updated`,
        ),
      )
      assert.equal(json('.claude.json').mcpServers.ev.url, moved.url)
      assert.equal(json('.cursor/mcp.json').mcpServers.ev.url, moved.url)
      assert.equal(json('.cursor/mcp.json').mcpServers.ev3.url, moved.url)
      assert.equal(toml('.codex/config.toml').mcp_servers.ev.url, moved.url)
    } finally {
      squatter.close()
    }
  })

  it('rm keeps client entries without a terminal (and says how to remove them); --unregister removes them', async () => {
    await started('gone')
    assert.equal((await cli(['client', 'add', 'gone', '--client', 'cursor'], home, ENV)).code, 0)
    const kept = await cli(['rm', '--force', 'gone'], home, ENV)
    assert.equal(kept.code, 0, kept.stderr)
    assert.match(
      kept.stderr,
      /gone: 1 client entry kept \(remove with 'toolgate client remove gone'\)/,
    )
    assert.ok(json('.cursor/mcp.json').mcpServers.gone)

    await started('gone')
    const r = await cli(['rm', '--force', '--unregister', 'gone'], home, ENV)
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /Cursor: removed "gone"/)
    assert.equal(json('.cursor/mcp.json').mcpServers.gone, undefined)
    assert.ok(json('.cursor/mcp.json').mcpServers.ev, 'other entries stay')
  })

  it('client remove takes out only what toolgate wrote', async () => {
    const r = await cli(['client', 'remove', 'ev', '--client', 'codex'], home, ENV)
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /Codex: removed "ev"/)
    assert.equal(toml('.codex/config.toml').mcp_servers?.ev, undefined)
    assert.ok(json('.claude.json').mcpServers.ev, 'claude entry still there')
    const none = await cli(['client', 'remove', 'nothing-here'], home, ENV)
    assert.equal(none.code, 0)
    assert.match(none.stdout, /No client entries written by toolgate for "nothing-here"/)
  })
})

describe('proxy stdio follows its workload', () => {
  let home: string
  before(async () => (home = await mkdtemp(join(tmpdir(), 'toolgate-follow-'))))
  after(async () => {
    await cli(['stop', '--all'], home, ENV)
    await rm(home, {recursive: true, force: true})
  })

  it('a connected client keeps working across stop + run, and fails only past the timeout', async () => {
    assert.equal((await cli(['run', 'ev', '--', ...UNRULY], home, ENV)).code, 0)
    const client = new Client({name: 'desktop', version: '1'})
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: ['bin/dev.js', 'proxy', 'stdio', 'ev', '--reconnect-timeout', '8s'],
        env: {
          PATH: ENV.PATH,
          HOME: home,
          XDG_CONFIG_HOME: join(home, 'config'),
          XDG_DATA_HOME: join(home, 'data'),
          XDG_STATE_HOME: join(home, 'state'),
        },
        stderr: 'ignore',
      }),
    )
    try {
      assert.equal(
        textOf(await client.callTool({name: 'echo', arguments: {message: 'before'}})),
        'echo: before',
      )
      assert.equal((await cli(['stop', 'ev'], home, ENV)).code, 0)
      // The call is sent while the workload is down; it is answered once the workload is back.
      const during = client.callTool({name: 'echo', arguments: {message: 'during'}})
      await new Promise((r) => setTimeout(r, 1_000))
      assert.equal((await cli(['run', 'ev', '--', ...UNRULY], home, ENV)).code, 0)
      assert.equal(textOf(await during), 'echo: during')
      assert.equal(
        textOf(await client.callTool({name: 'echo', arguments: {message: 'after'}})),
        'echo: after',
      )

      // Its port taken meanwhile, the workload comes back elsewhere: the client follows it there.
      const port = JSON.parse(
        readFileSync(join(home, 'state/toolgate/workloads/ev.json'), 'utf8'),
      ).port
      assert.equal((await cli(['stop', 'ev'], home, ENV)).code, 0)
      const squatter = createServer()
      await new Promise<void>((r) => squatter.listen(port, '127.0.0.1', r))
      try {
        assert.equal((await cli(['run', 'ev', '--', ...UNRULY], home, ENV)).code, 0)
        const moved = client.callTool({name: 'echo', arguments: {message: 'moved'}})
        assert.equal(textOf(await moved), 'echo: moved')
      } finally {
        squatter.close()
      }

      // Stopped, its port taken by another program: nothing the client sends goes there.
      const stoppedPort = JSON.parse(
        readFileSync(join(home, 'state/toolgate/workloads/ev.json'), 'utf8'),
      ).port
      assert.equal((await cli(['stop', 'ev'], home, ENV)).code, 0)
      const heard: string[] = []
      const impostor = createHttpServer((req, res) => {
        heard.push(`${req.method} ${req.url}`)
        res.writeHead(200, {'content-type': 'application/json'}).end('{}')
      })
      await new Promise<void>((r) => impostor.listen(stoppedPort, '127.0.0.1', r))
      try {
        await assert.rejects(
          client.callTool({name: 'echo', arguments: {message: 'secret'}}, undefined, {
            timeout: 20_000,
          }),
          /workload "ev" is not running/,
        )
        assert.deepEqual(heard, [], 'the program on the old port heard nothing')
      } finally {
        impostor.close()
      }
      const startedAt = Date.now()
      await assert.rejects(
        client.callTool({name: 'echo', arguments: {message: 'lost'}}),
        /upstream: .*workload "ev" is not running/,
      )
      assert.ok(Date.now() - startedAt >= 7_000, 'it waited for the workload first')
    } finally {
      await client.close()
    }
  })
})

describe('on a terminal: client setup picks, rm asks', () => {
  let home: string
  before(async () => (home = await mkdtemp(join(tmpdir(), 'toolgate-tty-'))))
  after(async () => {
    await cli(['stop', '--all'], home, ENV)
    await rm(home, {recursive: true, force: true})
  })

  /** A toolgate command on a real pseudo-terminal (util-linux `script`), answers typed in. */
  function onTerminal(argv: string[], answers: string[]): Promise<string> {
    const command = [process.execPath, 'bin/dev.js', ...argv].map((a) => `'${a}'`).join(' ')
    const child = spawn('script', ['-qec', command, '/dev/null'], {
      env: {
        PATH: ENV.PATH + ':/usr/bin:/bin',
        HOME: home,
        XDG_CONFIG_HOME: join(home, 'config'),
        XDG_DATA_HOME: join(home, 'data'),
        XDG_STATE_HOME: join(home, 'state'),
        TERM: 'dumb',
      },
    })
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (out += d.toString()))
    // Each answer once its question is on the screen.
    const pending = [...answers]
    const timer = setInterval(() => {
      const asked = (out.match(/\? \[[^\]]*\] /g) ?? []).length
      if (pending.length && asked > answers.length - pending.length)
        child.stdin.write(pending.shift() + '\r')
    }, 50)
    return new Promise((resolve, reject) => {
      const kill = setTimeout(() => child.kill(), 60_000)
      child.once('exit', (code) => {
        clearInterval(timer)
        clearTimeout(kill)
        if (code === 0) resolve(out)
        else reject(new Error(`exit ${code}: ${out}`))
      })
    })
  }

  it('client setup asks which workload and which clients; rm asks about the entries', async () => {
    assert.equal((await cli(['run', 'a', '--', ...UNRULY], home, ENV)).code, 0)
    assert.equal((await cli(['run', 'b', '--', ...UNRULY], home, ENV)).code, 0)
    const out = await onTerminal(['client', 'setup'], ['2', '1,3'])
    assert.match(out, /1\) a +http:\/\/127\.0\.0\.1:\d+\/mcp/)
    assert.match(out, /Which workload\? \[1\]/)
    assert.match(out, /Which clients \(comma-separated\)\?/)
    assert.match(out, /Claude Code: added "b" \(http\)/)
    assert.match(out, /Cursor: added "b" \(http\)/)
    const claude = JSON.parse(readFileSync(join(home, '.claude.json'), 'utf8'))
    assert.deepEqual(Object.keys(claude.mcpServers), ['b'])

    const removed = await onTerminal(['rm', '--force', 'b'], ['y'])
    assert.match(removed, /Remove the 2 client entries toolgate wrote for b too\? \[y\/N\]/)
    assert.match(removed, /Claude Code: removed "b"/)
    assert.deepEqual(JSON.parse(readFileSync(join(home, '.claude.json'), 'utf8')).mcpServers, {})
  })
})
