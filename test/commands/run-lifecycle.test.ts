import {execFileSync} from 'node:child_process'
import assert from 'node:assert/strict'
import {readFile, mkdtemp, rm, stat} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {setTimeout as sleep} from 'node:timers/promises'
import {pidAlive} from '../../src/lib/workloads/state.ts'
import {runCli, waitFor} from '../helpers/proxy-run.ts'
import {allFiles, mcpClient, runForeground, textOf, UNRULY} from '../helpers/workload.ts'

/**
 * The workload lifecycle as a user drives it from a fresh XDG dir — detached `run`, `list`,
 * `logs --follow`, `stop`, `rm` — and a server that misbehaves: garbage on stdout, a crash
 * mid-call, a hang, SIGTERM ignored, a failed start. The server is the real MCP SDK's McpServer
 * (test/fixtures/mcp/unruly-server.ts).
 */
async function cli(argv: string[], home: string, env: NodeJS.ProcessEnv = {}, input?: string) {
  const run = runCli(argv, home, env, input)
  const code = await run.exited
  return {code, stdout: run.stdout(), stderr: run.stderr()}
}

function pidOf(text: string): number {
  return (JSON.parse(text) as {supervisorPid: number}).supervisorPid
}

// A stopped background process may linger as a zombie (nobody reaps it here): that is gone.
const alive = (pid: number) => pidAlive(pid)

describe('toolgate run: detached lifecycle', () => {
  let home: string
  const state = (name: string) => join(home, 'state', 'toolgate', 'workloads', `${name}.json`)

  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'toolgate-life-'))
  })
  after(async () => {
    await cli(['stop', '--all'], home)
    await rm(home, {recursive: true, force: true})
  })

  it('run → list → logs --follow → stop → list → rm', async () => {
    const started = await cli(['run', 'calc', '--json', '--', ...UNRULY], home)
    assert.equal(started.code, 0, started.stderr)
    const info = JSON.parse(started.stdout) as {url: string; port: number; pid: number}
    assert.match(info.url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
    assert.ok(alive(info.pid), 'the background process runs after run returned')
    const st = await stat(state('calc'))
    assert.equal(st.mode & 0o777, 0o600)

    const listed = (
      JSON.parse((await cli(['list', '--json'], home)).stdout) as {
        event: string
        workloads: Array<Record<string, unknown>>
      }
    ).workloads
    assert.deepEqual(
      listed.map((r) => [r.name, r.status, r.url, r.port]),
      [['calc', 'running', info.url, info.port]],
    )

    const follow = runCli(['logs', 'calc', '--follow'], home)
    await waitFor(
      'the existing log',
      () => (follow.stdout().includes('unruly server ready') ? true : undefined),
      follow,
    )
    const client = await mcpClient(info.url)
    assert.equal(textOf(await client.callTool({name: 'noise', arguments: {}})), 'made noise')
    await waitFor(
      'a new line while following',
      () =>
        follow.stdout().includes('[stdout, not JSON-RPC] stray output from a tool')
          ? true
          : undefined,
      follow,
    )
    follow.child.kill('SIGINT')
    assert.equal(await follow.exited, 0)
    await client.close()

    const proxyLog = await cli(['logs', 'calc', '--proxy', '--tail', '50'], home)
    assert.match(proxyLog.stdout, /server started/)

    const stopped = await cli(['stop', 'calc'], home)
    assert.equal(stopped.code, 0, stopped.stderr)
    assert.match(stopped.stdout, /calc: stopped/)
    assert.equal(alive(info.pid), false)
    assert.equal(
      (await cli(['list'], home)).stdout.includes('calc'),
      false,
      'list hides stopped ones',
    )
    assert.match((await cli(['list', '--all'], home)).stdout, /calc\s+stopped/)

    assert.equal((await cli(['rm', 'calc'], home)).code, 0)
    assert.equal(
      (await cli(['list', '--all', '--json'], home)).stdout.trim(),
      '{"event":"workloads","workloads":[]}',
    )
    assert.equal((await cli(['logs', 'calc'], home)).code, 1)
  })

  it('refuses a second run with a live name, and rm of a running workload without --force', async () => {
    assert.equal((await cli(['run', 'twice', '--', ...UNRULY], home)).code, 0)
    const again = await cli(['run', 'twice', '--', ...UNRULY], home)
    assert.equal(again.code, 1)
    assert.match(again.stderr, /workload "twice" is already running/)
    const refused = await cli(['rm', 'twice'], home)
    assert.equal(refused.code, 1)
    assert.match(refused.stderr, /is running; stop it first/)
    assert.equal((await cli(['rm', '--force', 'twice'], home)).code, 0)
    assert.equal(
      (await cli(['list', '--all', '--json'], home)).stdout.trim(),
      '{"event":"workloads","workloads":[]}',
    )
  })

  it('shows a killed background process as lost, never as running', async () => {
    assert.equal((await cli(['run', 'victim', '--', ...UNRULY], home)).code, 0)
    const pid = pidOf(await readFile(state('victim'), 'utf8'))
    process.kill(pid, 'SIGKILL')
    await waitForGone(pid)
    const row = (
      JSON.parse((await cli(['list', '--all', '--json'], home)).stdout) as {
        workloads: Array<{name: string; status: string}>
      }
    ).workloads.find((r) => r.name === 'victim')
    assert.equal(row?.status, `lost (process ${pid} is gone)`)
    assert.equal((await cli(['list', '--json'], home)).stdout.includes('victim'), false)
    // `stop` cleans up after it (the orphaned server too) and records it as stopped.
    assert.equal((await cli(['stop', 'victim'], home)).code, 0)
    assert.match((await cli(['list', '--all'], home)).stdout, /victim\s+stopped/)
  })

  it('a server that fails to start makes run exit non-zero with its last stderr lines', async () => {
    const r = await cli(['run', 'broken', '--', ...UNRULY], home, {
      EXIT_AT_ONCE: 'API_KEY is not set',
    })
    assert.equal(r.code, 69)
    assert.match(r.stderr, /workload "broken" did not start/)
    assert.match(r.stderr, /cannot start: API_KEY is not set/)
    assert.match(r.stderr, /exited \(code 4\)/)
    assert.match(
      (await cli(['list', '--all'], home)).stdout,
      /broken\s+failed to start \(the MCP server exited \(code 4\) while starting/,
    )
    const missing = await cli(['run', 'nocmd', '--', '/nonexistent/server'], home)
    assert.equal(missing.code, 69)
    assert.match(missing.stderr, /cannot start "\/nonexistent\/server": command not found/)
  })

  it("tunes malloc for the background process only, and leaves a user's own GLIBC_TUNABLES alone", async () => {
    const envOf = async (pid: number) =>
      (await readFile(`/proc/${pid}/environ`, 'utf8'))
        .split('\0')
        .find((v) => v.startsWith('GLIBC_TUNABLES='))
    const serverSees = async (url: string) => {
      const client = await mcpClient(url)
      const text = textOf(await client.callTool({name: 'env', arguments: {name: 'GLIBC_TUNABLES'}}))
      await client.close()
      return text
    }
    const tuned = await cli(['run', 'tuned', '--json', '--', ...UNRULY], home)
    assert.equal(tuned.code, 0, tuned.stderr)
    const a = JSON.parse(tuned.stdout) as {url: string; pid: number}
    // glibc rewrites the variable it parsed in place: /proc/PID/environ shows it cut at the first ':'.
    assert.match((await envOf(a.pid)) ?? '', /^GLIBC_TUNABLES=glibc\.malloc\.arena_max=1\b/)
    assert.equal(await serverSees(a.url), '(unset)')

    const own = 'glibc.malloc.perturb=0'
    const mine = await cli(['run', 'tuned-user', '--json', '--', ...UNRULY], home, {
      GLIBC_TUNABLES: own,
    })
    assert.equal(mine.code, 0, mine.stderr)
    const b = JSON.parse(mine.stdout) as {url: string; pid: number}
    assert.equal(await envOf(b.pid), `GLIBC_TUNABLES=${own}`)
    assert.equal(await serverSees(b.url), own)
    await cli(['stop', 'tuned', 'tuned-user'], home)
  })

  it('puts --secret and -e values in the server environment and in no file or listing', async () => {
    const secretValue = 'sk-live-0123456789abcdef-do-not-leak'
    const set = await cli(['secret', 'set', 'api-key'], home, {}, secretValue)
    assert.equal(set.code, 0, set.stderr)
    const r = await cli(
      [
        'run',
        'secretive',
        '--json',
        '--secret',
        'api-key,target=API_KEY',
        '-e',
        'MODE=test',
        '--',
        ...UNRULY,
      ],
      home,
    )
    assert.equal(r.code, 0, r.stderr)
    const {url, pid} = JSON.parse(r.stdout) as {url: string; pid: number}
    const client = await mcpClient(url)
    assert.equal(
      textOf(await client.callTool({name: 'env', arguments: {name: 'API_KEY'}})),
      secretValue,
    )
    assert.equal(textOf(await client.callTool({name: 'env', arguments: {name: 'MODE'}})), 'test')
    // toolgate's own variables (the secrets password) are not the server's business.
    assert.equal(
      textOf(await client.callTool({name: 'env', arguments: {name: 'TOOLGATE_SECRETS_PASSWORD'}})),
      '(unset)',
    )
    await client.close()
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8')
    assert.doesNotMatch(cmdline, /api-key|MODE=test/, 'the arguments are not on the command line')
    // Nor is the secrets password in the background process's environment (issue 30, finding 7):
    // it reached the process on stdin, and /proc/<pid>/environ shows the environment it began with.
    const environ = await readFile(`/proc/${pid}/environ`, 'utf8')
    assert.doesNotMatch(environ, /TOOLGATE_SECRETS_PASSWORD/)
    assert.equal(environ.includes('test-password-for-the-secrets-file'), false)
    const ps = execFileSync('ps', ['eww', '-p', String(pid), '-o', 'args='], {encoding: 'utf8'})
    assert.equal(ps.includes('test-password-for-the-secrets-file'), false, 'nor in ps e')
    for (const f of await allFiles(join(home, 'state'))) {
      assert.equal(f.text.includes(secretValue), false, `${f.path} holds the secret`)
    }
    const saved = JSON.parse(await readFile(state('secretive'), 'utf8')) as {secrets?: string[]}
    assert.deepEqual(saved.secrets, ['api-key'])
    await cli(['stop', 'secretive'], home)
  })
})

async function waitForGone(pid: number): Promise<void> {
  for (let i = 0; i < 100 && alive(pid); i++) await sleep(50)
}

describe('toolgate run: a misbehaving server (foreground)', () => {
  let home: string
  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'toolgate-unruly-'))
  })
  after(async () => {
    await rm(home, {recursive: true, force: true})
  })

  it('logs stdout lines that are not JSON-RPC and never forwards them', async () => {
    const w = await runForeground('noisy', [], UNRULY, home)
    try {
      const client = await mcpClient(w.url)
      assert.equal(
        textOf(await client.callTool({name: 'echo', arguments: {message: 'x'}})),
        'echo: x',
      )
      await client.close()
      const log = await readFile(join(home, 'state', 'toolgate', 'logs', 'noisy.log'), 'utf8')
      assert.match(log, /\[stdout, not JSON-RPC\] Server starting\.\.\. \(not JSON-RPC\)/)
      assert.match(log, /\[stdout, not JSON-RPC\] \{"hello":"not json-rpc"\}/)
    } finally {
      await w.stop()
    }
  })

  it('a request past --request-timeout gets a JSON-RPC error and is cancelled on the server', async () => {
    const w = await runForeground('slow', ['--request-timeout', '1s'], UNRULY, home)
    try {
      const client = await mcpClient(w.url)
      await assert.rejects(
        client.callTool({name: 'hang', arguments: {}}, undefined, {timeout: 20_000}),
        /Request timed out after 1 s/,
      )
      const log = join(home, 'state', 'toolgate', 'logs', 'slow.log')
      for (let i = 0; i < 50 && !(await readFile(log, 'utf8')).includes('cancelled request'); i++)
        await sleep(100)
      assert.match(await readFile(log, 'utf8'), /cancelled request/)
      await client.close()
    } finally {
      await w.stop()
    }
  })

  it('a client that disconnects mid-call causes notifications/cancelled at the server', async () => {
    const w = await runForeground('leaver', [], UNRULY, home)
    try {
      const client = await mcpClient(w.url)
      const pending = client.callTool({name: 'hang', arguments: {}}).catch(() => undefined)
      await sleep(300)
      await client.close()
      await pending
      const log = join(home, 'state', 'toolgate', 'logs', 'leaver.log')
      for (let i = 0; i < 50 && !(await readFile(log, 'utf8')).includes('cancelled request'); i++)
        await sleep(100)
      assert.match(await readFile(log, 'utf8'), /cancelled request/)
    } finally {
      await w.stop()
    }
  })

  it('a server that crashes mid-call: the client gets an error, the run ends with its exit code', async () => {
    const w = await runForeground('crashy', [], UNRULY, home)
    const client = await mcpClient(w.url)
    await assert.rejects(
      client.callTool({name: 'crash', arguments: {}}),
      /MCP server exited \(code 7\)/,
    )
    assert.equal(await w.run.exited, 69)
    assert.match(w.run.stderr(), /the MCP server exited \(code 7\)/)
    const list = await cli(['list', '--all', '--json'], home)
    const row = (
      JSON.parse(list.stdout) as {
        workloads: Array<{name: string; status: string; exitCode?: number}>
      }
    ).workloads.find((r) => r.name === 'crashy')
    assert.deepEqual([row?.status, row?.exitCode], ['exited (code 7)', 7])
    await client.close().catch(() => undefined)
  })

  it('--restart on-failure restarts a crashed server', async () => {
    const w = await runForeground('phoenix', ['--restart', 'on-failure:2'], UNRULY, home)
    try {
      const c1 = await mcpClient(w.url)
      await assert.rejects(c1.callTool({name: 'crash', arguments: {}}))
      await c1.close().catch(() => undefined)
      let text = ''
      for (let i = 0; i < 40 && !text; i++) {
        await sleep(250)
        text = await mcpClient(w.url)
          .then(async (c) => {
            const t = textOf(await c.callTool({name: 'echo', arguments: {message: 'again'}}))
            await c.close()
            return t
          })
          .catch(() => '')
      }
      assert.equal(text, 'echo: again')
    } finally {
      await w.stop()
    }
  })

  it('a server that ignores SIGTERM is killed after --stop-timeout', async () => {
    const w = await runForeground('stubborn', ['--stop-timeout', '1s'], UNRULY, home, {
      IGNORE_SIGTERM: '1',
    })
    const saved = JSON.parse(
      await readFile(join(home, 'state', 'toolgate', 'workloads', 'stubborn.json'), 'utf8'),
    ) as {serverPid: number}
    assert.ok(alive(saved.serverPid))
    // One answered call proves the server has finished loading, so its SIGTERM handler is in
    // place (the proxy is ready before the server; on a busy machine a SIGTERM could land first).
    const client = await mcpClient(w.url)
    await client.listTools()
    await client.close()
    const t0 = Date.now()
    await w.stop()
    assert.equal(await w.run.exited, 0)
    assert.ok(Date.now() - t0 < 10_000)
    await waitForGone(saved.serverPid)
    assert.equal(alive(saved.serverPid), false)
    assert.match(
      await readFile(join(home, 'state', 'toolgate', 'logs', 'stubborn.log'), 'utf8'),
      /ignoring SIGTERM[\s\S]*killed by SIGKILL/,
    )
  })
})
