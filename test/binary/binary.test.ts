/**
 * The linux-x64 release artifact (npm run build:binaries, shared with the other release tests)
 * runs with no node_modules: `--version`, `--help` and every command's help exactly as from
 * source, `serve` answering the example registry, and the embedded native keyring addon against
 * the real OS keyring.
 *
 * Skips only when the release cannot be built on this platform (not linux-x64); a failing build
 * fails the test.
 */
import assert from 'node:assert/strict'
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import {tmpdir} from 'node:os'
import {dirname, join} from 'node:path'
import {after, before, describe, test} from 'node:test'
import {spawn, spawnSync} from 'node:child_process'
import {createServer, type AddressInfo} from 'node:net'
import {createMemoryLogger} from '../../src/lib/log/logger.ts'
import {acceptEgressListener} from '../../src/lib/sandbox/egress-channel.ts'
import {startEgressProxy} from '../../src/lib/sandbox/egress-proxy.ts'
import {SANDBOX_INIT_FLAG} from '../../src/lib/sandbox/init-flag.ts'
import {parsePermissionProfile} from '../../src/lib/sandbox/profile.ts'
import {freePort} from '../helpers/mcp-upstream.ts'
import {
  cleanEnv,
  NODE,
  releaseExe,
  ROOT,
  run,
  SERVE_EXAMPLE_ARGS,
  seaUnsupportedReason,
  sharedRelease,
  startAndWaitForLine,
} from './binary-helpers.ts'
import {needs} from '../helpers/component.ts'

const unsupported = seaUnsupportedReason()
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {version: string}

function keyringToolsAvailable(): boolean {
  const ok = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0
  return ok('dbus-run-session') && ok('gnome-keyring-daemon')
}

describe(
  'standalone executable',
  {skip: needs('a SEA-capable Node (linux-x64)', unsupported)},
  () => {
    let work: string
    let bin: string
    let home: string

    before(
      async () => {
        work = mkdtempSync(join(tmpdir(), 'toolgate-binary-'))
        const built = releaseExe(await sharedRelease(), 'linux-x64')
        // The binary runs from a directory of its own, far from the checkout's node_modules.
        mkdirSync(join(work, 'app', 'examples'), {recursive: true})
        bin = join(work, 'app', 'toolgate')
        copyFileSync(built, bin)
        for (const f of ['anonymous.yaml', 'registry.json']) {
          copyFileSync(join(ROOT, 'examples', f), join(work, 'app', 'examples', f))
        }
        home = join(work, 'home')
        mkdirSync(home)
      },
      {timeout: 900_000},
    )
    after(() => {
      if (work) rmSync(work, {recursive: true, force: true})
    })

    const runBin = (args: string[], extra: {stdin?: string} = {}) =>
      run(bin, args, {cwd: dirname(bin), env: cleanEnv(home), ...extra})
    const runSource = (args: string[]) =>
      run(NODE, [join(ROOT, 'bin', 'dev.js'), ...args], {cwd: ROOT, env: cleanEnv(home)})

    test('has no node_modules in its directory or any parent', () => {
      for (let dir = dirname(bin); ; dir = dirname(dir)) {
        assert.equal(existsSync(join(dir, 'node_modules')), false, `${dir}/node_modules exists`)
        if (dir === dirname(dir)) break
      }
    })

    test('--version prints the version, platform, pinned Node, commit and build date', async () => {
      const pinned = (
        JSON.parse(readFileSync(join(ROOT, 'scripts/release/runtimes.json'), 'utf8')) as {
          node: string
        }
      ).node
      const r = await runBin(['--version'])
      assert.equal(r.code, 0, r.stderr)
      // The V8 code cache built with the executable is accepted (a rejected one warns on stderr).
      assert.equal(r.stderr, '')
      const m = new RegExp(
        `^toolgate/${pkg.version.replaceAll('.', '\\.')} linux-x64 node-v${pinned.replaceAll('.', '\\.')} commit ([0-9a-f]{12}|unknown) built (\\S+)$`,
      ).exec(r.stdout.trim())
      assert.ok(m, r.stdout)
      assert.ok(!Number.isNaN(Date.parse(m[2]!)), m[2])
      const json = await runBin(['version', '--json'])
      assert.equal(json.code, 0, json.stderr)
      assert.deepEqual(JSON.parse(json.stdout), {
        event: 'version',
        version: pkg.version,
        commit: m[1],
        build_date: m[2],
        node_version: `v${pinned}`,
        platform: 'linux/x64',
      })
    })

    for (const args of [['--help'], ['serve', '--help'], ['secret', '--help']]) {
      test(`\`${args.join(' ')}\` prints exactly what the CLI prints from source`, async () => {
        const [fromBinary, fromSource] = await Promise.all([runBin(args), runSource(args)])
        assert.equal(fromBinary.code, 0, fromBinary.stderr)
        assert.equal(fromBinary.code, fromSource.code)
        // The root help's VERSION line names the runtime: the executable embeds the release Node.
        const sameRuntime = (text: string) => text.replace(/ node-v[\d.]+\n/, ' node-vX\n')
        assert.equal(sameRuntime(fromBinary.stdout), sameRuntime(fromSource.stdout))
      })
    }

    test('an unknown command exits 2 naming the closest command, as from source', async () => {
      const [fromBinary, fromSource] = await Promise.all([runBin(['sever']), runSource(['sever'])])
      assert.equal(fromBinary.code, 2)
      assert.equal(fromBinary.code, fromSource.code)
      assert.match(
        fromBinary.stderr,
        /^Error: "sever" is not a toolgate command\. Did you mean "toolgate serve"\?/,
      )
      assert.equal(fromBinary.stderr, fromSource.stderr)
      const [helpBinary, helpSource] = await Promise.all([
        runBin(['help', 'secret', 'get']),
        runSource(['help', 'secret', 'get']),
      ])
      assert.equal(helpBinary.code, 0, helpBinary.stderr)
      assert.equal(helpBinary.stdout, helpSource.stdout)
    })

    test('every command of the COMMANDS map answers --help, topic commands included', async () => {
      const {COMMANDS} = (await import('../../src/index.ts')) as {COMMANDS: Record<string, unknown>}
      const ids = Object.keys(COMMANDS).map((id) => id.replaceAll(':', ' '))
      assert.ok(ids.includes('serve'))
      for (const id of ids) {
        const r = await runBin([...id.split(' '), '--help'])
        assert.equal(r.code, 0, `${id}: ${r.stderr}`)
        assert.ok(
          r.stdout.includes(`$ toolgate ${id}`),
          `${id}: usage line missing in\n${r.stdout}`,
        )
      }
    })

    test(
      'serve answers GET /registry/default/v0.1/servers from the example registry (anonymous, port 0)',
      {timeout: 120_000},
      async (t) => {
        const serve = await startAndWaitForLine(bin, SERVE_EXAMPLE_ARGS, {
          cwd: dirname(bin),
          env: cleanEnv(home),
          timeoutMs: 60_000,
        })
        t.after(() => serve.stop('SIGKILL'))
        const url = String(serve.ready.url)
        const internalUrl = String(serve.ready.internalUrl)
        assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/)

        // Ready once the file source has loaded (bounded wait).
        const deadline = Date.now() + 60_000
        for (;;) {
          const r = await fetch(`${internalUrl}/readiness`)
          await r.arrayBuffer()
          if (r.status === 200) break
          assert.ok(Date.now() < deadline, `not ready within 60 s: ${serve.stderr()}`)
          await new Promise((resolve) => setTimeout(resolve, 200))
        }

        const res = await fetch(`${url}/registry/default/v0.1/servers`)
        assert.equal(res.status, 200)
        const body = (await res.json()) as {
          servers: {server: {name: string}}[]
          metadata: {count: number; nextCursor?: string}
        }
        assert.equal(body.servers.length, 30)
        assert.equal(body.metadata.count, 30)
        assert.ok(body.metadata.nextCursor, 'a 237-version registry has a second page')
        const example = JSON.parse(
          readFileSync(join(ROOT, 'examples', 'registry.json'), 'utf8'),
        ) as {
          data: {servers: {name: string}[]}
        }
        const names = new Set(example.data.servers.map((s) => s.name))
        for (const entry of body.servers) assert.ok(names.has(entry.server.name), entry.server.name)

        const one = await fetch(
          `${url}/registry/default/v0.1/servers/${encodeURIComponent('io.github.acme-labs/weather')}/versions/latest`,
        )
        assert.equal(one.status, 200)
        assert.equal(
          ((await one.json()) as {server: {name: string}}).server.name,
          'io.github.acme-labs/weather',
        )

        // Build facts defined at bundle time reach /version.
        const version = (await (await fetch(`${internalUrl}/version`)).json()) as Record<
          string,
          string
        >
        assert.equal(version.version, pkg.version)
        assert.match(version.commit ?? '', /^([0-9a-f]{12}|unknown)$/)
        assert.ok(
          !Number.isNaN(Date.parse(version.build_date ?? '')),
          `build_date ${version.build_date}`,
        )
        assert.match(version.node_version ?? '', /^v\d+\./)

        assert.equal(await serve.stop('SIGTERM'), 0, serve.stderr())
      },
    )

    test(
      'run starts a detached stdio workload from the binary; list, stop and rm manage it',
      {timeout: 120_000},
      async () => {
        // The server is the user's own program (here server-everything with the pinned Node);
        // the executable itself needs no node_modules to re-launch itself in the background.
        const server = [
          NODE,
          join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'),
          'stdio',
        ]
        const started = await runBin(['run', 'bin-wl', '--json', '--', ...server])
        assert.equal(started.code, 0, started.stderr)
        const {url} = JSON.parse(started.stdout) as {url: string}
        const init = await fetch(url, {
          method: 'POST',
          headers: {'content-type': 'application/json', accept: 'application/json'},
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: {
              protocolVersion: '2025-06-18',
              capabilities: {},
              clientInfo: {name: 't', version: '1'},
            },
          }),
        })
        assert.equal(init.status, 200)
        const body = (await init.json()) as {result: {serverInfo: {name: string}}}
        assert.ok(body.result.serverInfo.name)
        const listed = (
          JSON.parse((await runBin(['list', '--json'])).stdout) as {
            workloads: Array<{name: string; status: string}>
          }
        ).workloads
        assert.deepEqual(
          listed.map((r) => [r.name, r.status]),
          [['bin-wl', 'running']],
        )
        // The bundled config editors (jsonc-parser, smol-toml) work: Cursor's JSON, Codex's TOML,
        // and the stdio entry names the executable itself.
        const added = await runBin([
          'client',
          'add',
          'bin-wl',
          '--client',
          'cursor,codex',
          '--via',
          'stdio',
        ])
        assert.equal(added.code, 0, added.stderr)
        const cursor = JSON.parse(readFileSync(join(home, '.cursor', 'mcp.json'), 'utf8'))
        assert.equal(cursor.mcpServers['bin-wl'].command, bin)
        assert.deepEqual(cursor.mcpServers['bin-wl'].args, ['proxy', 'stdio', 'bin-wl'])
        assert.match(
          readFileSync(join(home, '.codex', 'config.toml'), 'utf8'),
          /\[mcp_servers\.bin-wl\]/,
        )
        assert.equal((await runBin(['stop', 'bin-wl'])).code, 0)
        assert.equal((await runBin(['rm', 'bin-wl', '--unregister'])).code, 0)
        assert.equal(
          JSON.parse(readFileSync(join(home, '.cursor', 'mcp.json'), 'utf8')).mcpServers['bin-wl'],
          undefined,
        )
      },
    )

    test(
      'the embedded Cedar wasm parses policies: a bad policy is refused naming its index, a good one lets proxy start',
      {timeout: 120_000},
      async () => {
        const policy = (policies: string[]) =>
          JSON.stringify({
            version: '1.0',
            type: 'cedarv1',
            cedar: {policies, entities_json: '[]', group_claim_name: '', role_claim_name: ''},
          })
        const good = 'permit(principal, action == Action::"call_tool", resource == Tool::"echo");'
        const dir = dirname(bin)
        writeFileSync(
          join(dir, 'bad-policy.json'),
          policy([good, 'permit(principal, action, resource) when { principal.x == };']),
        )
        writeFileSync(join(dir, 'good-policy.json'), policy([good]))

        const bad = await runBin([
          'proxy',
          'demo',
          '--target-uri',
          'http://127.0.0.1:9',
          // Authorization needs an authenticated principal; the issuer is not contacted at startup.
          '--oidc-issuer',
          'http://127.0.0.1:9',
          '--authz-config',
          'bad-policy.json',
        ])
        assert.equal(bad.code, 78, bad.stderr)
        // The parser's own message can only come from the wasm module.
        assert.match(bad.stderr, /cedar\.policies\[1\].*unexpected token/)

        const proxy = await startAndWaitForLine(
          bin,
          [
            'proxy',
            'demo',
            '--target-uri',
            'http://127.0.0.1:9',
            '--host',
            '127.0.0.1',
            '--oidc-issuer',
            'http://127.0.0.1:9',
            '--authz-config',
            'good-policy.json',
            '--json',
          ],
          {cwd: dir, env: cleanEnv(home), timeoutMs: 60_000},
        )
        try {
          assert.match(JSON.stringify(proxy.ready), /127\.0\.0\.1:\d+/)
        } finally {
          await proxy.stop('SIGTERM')
        }
      },
    )

    test('inside a sandbox, its init hands the egress listener to toolgate over the channel', async () => {
      // The destination, and an egress proxy that allows only it (toolgate's side, from source).
      const target = createServer((c) => c.end('from the destination'))
      await new Promise<void>((r) => target.listen(0, '127.0.0.1', () => r()))
      const targetPort = (target.address() as AddressInfo).port
      const egress = startEgressProxy(
        parsePermissionProfile(
          {network: {outbound: {allow_host: ['127.0.0.1'], allow_port: [targetPort]}}},
          'p.json',
          work,
          home,
        ),
        createMemoryLogger(),
      )
      const port = await freePort()
      // The "server" after the init: a CONNECT through the egress port, its answer printed.
      const server = `const c = require('net').connect(${port}, '127.0.0.1'); let t = ''; c.on('data', (d) => (t += d)); c.on('end', () => console.log(JSON.stringify(t))); c.write('CONNECT 127.0.0.1:${targetPort} HTTP/1.1\\r\\n\\r\\n')`
      const init = spawn(bin, [SANDBOX_INIT_FLAG, String(port), NODE, '-e', server], {
        env: cleanEnv(home),
        stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
      })
      acceptEgressListener(init, egress, createMemoryLogger())
      try {
        let out = ''
        init.stdout!.on('data', (d) => (out += d))
        const code = await new Promise((resolve) => init.on('exit', resolve))
        assert.equal(code, 0)
        assert.equal(
          JSON.parse(out),
          'HTTP/1.1 200 Connection Established\r\n\r\nfrom the destination',
        )
      } finally {
        init.kill('SIGKILL')
        await egress.close()
        target.close()
      }
    })

    test(
      'the embedded native keyring addon stores and reads the secrets password in the real OS keyring',
      {
        skip: needs(
          'the OS keyring',
          !keyringToolsAvailable() && 'dbus-run-session / gnome-keyring-daemon not installed',
        ),
        timeout: 120_000,
      },
      async () => {
        const keyHome = join(work, 'keyring-home')
        mkdirSync(keyHome)
        const env = cleanEnv(keyHome)
        // One private D-Bus session with an unlocked GNOME Keyring for the whole sequence (testing.md).
        const script = [
          'printf unlock-pw | gnome-keyring-daemon --unlock --components=secrets >/dev/null',
          'TOOLGATE_SECRETS_PASSWORD=master-pw-123 "$BIN" secret setup',
          'printf s3cr3t-value | "$BIN" secret set demo',
          // No password in the environment: it must come back from the keyring through the addon.
          '"$BIN" secret get demo',
        ].join(' && ')
        const r = await run('dbus-run-session', ['--', 'sh', '-c', script], {
          cwd: keyHome,
          env: {...env, BIN: bin},
          timeoutMs: 100_000,
        })
        assert.equal(r.code, 0, r.stderr)
        assert.match(r.stdout, /saved in the OS keyring/)
        assert.equal(r.stdout.trim().split('\n').at(-1), 's3cr3t-value')
        assert.doesNotMatch(r.stderr, /not loadable/)
      },
    )
  },
)
