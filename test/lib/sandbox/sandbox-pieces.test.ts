/**
 * The sandbox's pieces without a sandbox (issue 32): permission profiles (ToolHive's shape, every
 * bad field named), the egress rules, what a hostile client can send the egress proxy, the bwrap
 * command line (toolgate's directories masked even inside a profile path), the relays that carry
 * downloads out of it (every byte, in order, with backpressure), the macOS profile text
 * (sandbox-exec cannot run here), and the refusal on Windows.
 */
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {createHash, randomBytes} from 'node:crypto'
import {mkdirSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {request} from 'node:http'
import {connect, createServer, type Socket} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {bwrapCommand} from '../../../src/lib/sandbox/bwrap.ts'
import {
  parseAuthority,
  startEgressProxy,
  type EgressProxy,
} from '../../../src/lib/sandbox/egress-proxy.ts'
import {recognizeNpx} from '../../../src/lib/sandbox/npm-install.ts'
import {consoleScriptOf, recognizeUvx} from '../../../src/lib/sandbox/pypi-install.ts'
import {
  allowsConnection,
  builtinProfile,
  loadPermissionProfile,
  parsePermissionProfile,
} from '../../../src/lib/sandbox/profile.ts'
import {SANDBOX_INIT_SOURCE} from '../../../src/lib/sandbox/init-source.ts'
import {acceptEgressListener} from '../../../src/lib/sandbox/egress-channel.ts'
import {prepareSandbox, shelterLoaderEnv} from '../../../src/lib/sandbox/sandbox.ts'
import {seatbeltProfile} from '../../../src/lib/sandbox/seatbelt.ts'
import {freePort} from '../../helpers/mcp-upstream.ts'

const parse = (value: unknown) => parsePermissionProfile(value, 'p.json', '/work', '/home/u')

describe('permission profiles', () => {
  it('reads ToolHive profiles: read, write (relative and ~), outbound hosts and ports', () => {
    const p = parse({
      read: ['~/data', 'rel'],
      write: ['/tmp/out'],
      network: {outbound: {allow_host: ['api.example.com', '.github.com'], allow_port: [443]}},
    })
    assert.deepEqual(p.read, ['/home/u/data', '/work/rel'])
    assert.deepEqual(p.write, ['/tmp/out'])
    assert.deepEqual(p.network, {
      allowAll: false,
      allowHosts: ['api.example.com', '.github.com'],
      allowPorts: [443],
    })
    assert.deepEqual(builtinProfile('network').network.allowAll, true)
    assert.deepEqual(builtinProfile('none').network, {
      allowAll: false,
      allowHosts: [],
      allowPorts: [],
    })
  })

  it('names the field of every bad profile', () => {
    const cases: Array<[unknown, RegExp]> = [
      [[], /must be a JSON object/],
      [{mount: []}, /unknown key "mount"/],
      [{read: '/etc'}, /read: must be a list of paths/],
      [{read: ['/a:/b']}, /read\[0\]: "\/a:\/b" is not a plain path/],
      [{privileged: true}, /never runs a server privileged/],
      [{network: {outbound: {allow_host: ['a b']}}}, /allow_host\[0\]: "a b" is not a host name/],
      [{network: {outbound: {allow_port: [0]}}}, /allow_port\[0\]: 0 is not a port/],
      [
        {network: {outbound: {insecure_allow_all: 'yes'}}},
        /insecure_allow_all: must be true or false/,
      ],
      [{network: {outbound: {deny_host: []}}}, /unknown key "deny_host"/],
    ]
    for (const [value, message] of cases) assert.throws(() => parse(value), message)
    const dir = mkdtempSync(join(tmpdir(), 'tg-profile-'))
    try {
      writeFileSync(join(dir, 'broken.json'), '{read: [}')
      assert.throws(() => loadPermissionProfile(join(dir, 'broken.json')), /not JSON/)
      assert.throws(
        () => loadPermissionProfile(join(dir, 'missing.json')),
        /not a built-in profile \(none, network\) and not a readable file/,
      )
    } finally {
      rmSync(dir, {recursive: true, force: true})
    }
  })

  it('allows exactly allow_host × allow_port: exact names, .suffix for subdomains only', () => {
    const p = parse({
      network: {
        outbound: {
          allow_host: ['api.example.com', '.github.com', '127.0.0.1'],
          allow_port: [443, 8080],
        },
      },
    })
    const yes: Array<[string, number]> = [
      ['api.example.com', 443],
      ['API.Example.com.', 8080],
      ['raw.github.com', 443],
      ['127.0.0.1', 8080],
    ]
    const no: Array<[string, number]> = [
      ['api.example.com', 80],
      ['evil-api.example.com', 443],
      ['github.com', 443],
      ['xgithub.com', 443],
      ['api.example.com.evil.net', 443],
      ['127.0.0.2', 443],
    ]
    for (const [h, port] of yes) assert.equal(allowsConnection(p, h, port), true, `${h}:${port}`)
    for (const [h, port] of no) assert.equal(allowsConnection(p, h, port), false, `${h}:${port}`)
    const anyPort = parse({network: {outbound: {allow_host: ['a.test']}}})
    assert.equal(allowsConnection(anyPort, 'a.test', 22), true, 'no allow_port: any port')
    assert.equal(allowsConnection(builtinProfile('none'), 'a.test', 443), false)
  })
})

describe('the egress proxy against a hostile client', () => {
  let proxy: EgressProxy
  let proxyPort: number
  let target: ReturnType<typeof createServer>
  let targetPort: number
  const logger = createMemoryLogger()
  before(async () => {
    target = createServer((c) => c.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok'))
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', () => r()))
    targetPort = (target.address() as {port: number}).port
    proxy = startEgressProxy(
      parse({network: {outbound: {allow_host: ['127.0.0.1'], allow_port: [targetPort]}}}),
      logger,
    )
    proxyPort = (await proxy.serve({host: '127.0.0.1', port: 0})).port
  })
  after(async () => {
    await proxy.close()
    target.close()
  })

  const raw = (text: string) =>
    new Promise<string>((resolve) => {
      const s = connect(proxyPort, '127.0.0.1')
      let out = ''
      s.on('data', (d) => (out += d.toString()))
      s.on('close', () => resolve(out))
      s.on('error', () => resolve(out))
      s.write(text)
      setTimeout(() => s.destroy(), 700)
    })

  it('parses CONNECT targets strictly', () => {
    assert.deepEqual(parseAuthority('example.com:443'), {host: 'example.com', port: 443})
    assert.deepEqual(parseAuthority('[::1]:8080'), {host: '::1', port: 8080})
    for (const bad of [
      'example.com',
      'example.com:0',
      'example.com:70000',
      'user@example.com:443',
      'a b:1',
      'http://x:1',
      ':443',
      'x:443/y',
    ])
      assert.equal(parseAuthority(bad), undefined, bad)
  })

  it('tunnels an allowed CONNECT and refuses the rest with 403, each logged', async () => {
    const ok = await raw(
      `CONNECT 127.0.0.1:${targetPort} HTTP/1.1\r\nhost: x\r\n\r\nGET / HTTP/1.1\r\nhost: x\r\n\r\n`,
    )
    assert.match(ok, /^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 OK/)
    for (const target of [
      '127.0.0.1:1',
      'localhost:' + targetPort,
      '127.0.0.1.nip.io:' + targetPort,
      '[::1]:' + targetPort,
    ]) {
      const no = await raw(`CONNECT ${target} HTTP/1.1\r\nhost: x\r\n\r\n`)
      assert.match(no, /^HTTP\/1\.1 403 Forbidden/, target)
    }
    const lines = logger.lines.join('\n')
    assert.match(lines, new RegExp(`egress .*port=${targetPort} method=CONNECT decision=allow`))
    assert.match(lines, /egress .*host=localhost .*decision=deny/)
  })

  it('refuses malformed and smuggled requests', async () => {
    const cases: Array<[string, RegExp]> = [
      ['CONNECT nohost HTTP/1.1\r\n\r\n', /^HTTP\/1\.1 400/],
      [`GET /relative HTTP/1.1\r\nhost: 127.0.0.1:${targetPort}\r\n\r\n`, /^HTTP\/1\.1 400/],
      [`GET https://127.0.0.1:${targetPort}/ HTTP/1.1\r\nhost: x\r\n\r\n`, /^HTTP\/1\.1 400/],
      [`GET http://u:p@127.0.0.1:${targetPort}/ HTTP/1.1\r\nhost: x\r\n\r\n`, /^HTTP\/1\.1 400/],
      // Content-Length and Transfer-Encoding together (a smuggling attempt): refused by the parser.
      [
        `POST http://127.0.0.1:${targetPort}/ HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\nGET http://127.0.0.1:1/ HTTP/1.1\r\nhost: x\r\n\r\n`,
        /^HTTP\/1\.1 400/,
      ],
      // The Host field never decides: the URL's authority does.
      [
        `GET http://127.0.0.1:1/ HTTP/1.1\r\nhost: 127.0.0.1:${targetPort}\r\n\r\n`,
        /^HTTP\/1\.1 403/,
      ],
    ]
    for (const [text, expected] of cases)
      assert.match(await raw(text), expected, JSON.stringify(text))
  })

  it('forwards an allowed plain-http request', async () => {
    const body = await new Promise<string>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: proxyPort,
          path: `http://127.0.0.1:${targetPort}/x`,
          headers: {'proxy-authorization': 'Basic x'},
        },
        (res) => {
          let t = ''
          res.on('data', (d) => (t += d))
          res.on('end', () => resolve(`${res.statusCode} ${t}`))
        },
      )
      req.on('error', reject)
      req.end()
    })
    assert.equal(body, '200 ok')
  })
})

describe('the bwrap command line', () => {
  const plan = (over: Partial<Parameters<typeof bwrapCommand>[1]> = {}) =>
    bwrapCommand('/usr/bin/bwrap', {
      profile: parse({read: ['/home/u'], write: ['/srv/out']}),
      command: '/usr/bin/node',
      args: ['server.js'],
      cwd: '/srv/app',
      home: '/home/u',
      extraRead: ['/opt/node/bin/node'],
      hidden: ['/home/u/.local/state/toolgate', '/home/u/.config/toolgate'],
      init: {command: '/opt/node/bin/node', args: ['-e', 'init', '--']},
      ...over,
    })

  it('namespaces, no network, read-only binds, and toolgate dirs masked inside a bound home', () => {
    const {command, args} = plan()
    assert.equal(command, '/usr/bin/bwrap')
    const text = args.join(' ')
    for (const flag of [
      '--die-with-parent',
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--unshare-user',
      '--unshare-net',
    ])
      assert.ok(args.includes(flag), flag)
    assert.match(text, /--ro-bind-try \/home\/u \/home\/u/)
    assert.match(text, /--bind-try \/srv\/out \/srv\/out/)
    assert.match(text, /--tmpfs \/home\/u\/\.local\/state\/toolgate/)
    assert.match(text, /--tmpfs \/home\/u\/\.config\/toolgate/)
    assert.ok(
      text.indexOf('--tmpfs /home/u/.local/state/toolgate') >
        text.indexOf('--ro-bind-try /home/u /home/u'),
      'masked after the bind',
    )
    assert.match(text, /-- \/opt\/node\/bin\/node -e init -- - \/usr\/bin\/node server\.js$/)
  })

  it('as root: privileged bwrap, the server dropped to uid 65534 inside before it starts', () => {
    const {args} = plan({dropTo: {uid: 65534, gid: 65534}})
    assert.equal(args.includes('--unshare-user'), false)
    const text = args.join(' ')
    assert.match(
      text,
      /-- setpriv --reuid 65534 --regid 65534 --clear-groups --no-new-privs --inh-caps=-all --bounding-set=-all -- \/opt\/node\/bin\/node/,
    )
  })

  it('insecure_allow_all shares the network; allowed hosts give the init the egress port', () => {
    assert.ok(plan({profile: builtinProfile('network')}).args.includes('--share-net'))
    const {args} = plan({egressPort: 3128})
    assert.ok(args.includes('--unshare-net'))
    assert.match(
      args.join(' '),
      /-- \/opt\/node\/bin\/node -e init -- 3128 \/usr\/bin\/node server\.js$/,
    )
  })
})

describe('other systems', () => {
  it('macOS: a deny-by-default Seatbelt profile from the same rules', () => {
    const text = seatbeltProfile({
      profile: parse({
        read: ['/Users/u/data'],
        write: ['/Users/u/out'],
        network: {outbound: {allow_host: ['a.test']}},
      }),
      extraRead: ['/opt/homebrew/bin/node'],
      tmpDir: '/private/tmp/toolgate-w',
      hidden: ['/Users/u/.config/toolgate'],
      egressPort: 40001,
    })
    assert.match(text, /^\(version 1\)\n\(deny default\)\n/)
    assert.match(text, /\(allow file-read\* .*\(subpath "\/Users\/u\/data"\)/)
    assert.match(
      text,
      /\(allow file-read\* file-write\* \(subpath "\/private\/tmp\/toolgate-w"\) \(subpath "\/Users\/u\/out"\)\)/,
    )
    assert.match(
      text,
      /\(deny file-read\* file-write\* \(subpath "\/Users\/u\/\.config\/toolgate"\)\)/,
    )
    assert.match(text, /\(allow network-outbound \(remote tcp "localhost:40001"\)\)/)
    assert.doesNotMatch(text, /\(allow network\*\)/)
    assert.doesNotMatch(text, /\/Users\/u"\)/, 'the home itself is not readable')
    const quoted = seatbeltProfile({
      profile: parse({read: ['/a"b\\c']}),
      extraRead: [],
      tmpDir: '/t',
      hidden: [],
    })
    assert.match(quoted, /\(subpath "\/a\\"b\\\\c"\)/)
    assert.match(
      seatbeltProfile({
        profile: builtinProfile('network'),
        extraRead: [],
        tmpDir: '/t',
        hidden: [],
      }),
      /\(allow network\*\)/,
    )
  })

  it('macOS: the egress proxy listens on a loopback port, the only one the profile allows', () =>
    withEgress(
      (c) => c.end('from the destination'),
      async (_proxy, targetPort) => {
        const prepared = await prepareSandbox(
          [process.execPath, '-e', '0'],
          {},
          {
            workload: 'w',
            profile: parse({
              network: {outbound: {allow_host: ['127.0.0.1'], allow_port: [targetPort]}},
            }),
          },
          {logger: createMemoryLogger(), platform: 'darwin'},
        )
        try {
          assert.equal(prepared.command[0], 'sandbox-exec')
          assert.equal(prepared.channel, undefined)
          const port = Number(new URL(prepared.env.HTTPS_PROXY!).port)
          assert.ok(port > 0)
          assert.match(
            prepared.command[2]!,
            new RegExp(`\\(allow network-outbound \\(remote tcp "localhost:${port}"\\)\\)`),
          )
          const text = await new Promise<string>((resolve, reject) => {
            const s = connect(port, '127.0.0.1')
            let out = ''
            s.on('data', (d) => (out += d))
            s.on('end', () => resolve(out))
            s.on('error', reject)
            s.write(`CONNECT 127.0.0.1:${targetPort} HTTP/1.1\r\nhost: x\r\n\r\n`)
          })
          assert.equal(text, 'HTTP/1.1 200 Connection Established\r\n\r\nfrom the destination')
        } finally {
          await prepared.close()
        }
      },
    ))

  it('Windows: --sandbox is refused with a clear error', async () => {
    await assert.rejects(
      prepareSandbox(
        ['server'],
        {},
        {workload: 'w', profile: builtinProfile('none')},
        {logger: createMemoryLogger(), platform: 'win32'},
      ),
      (err: Error & {code?: string}) =>
        err.code === 'ERR_SANDBOX_UNAVAILABLE' && /not available on Windows/.test(err.message),
    )
  })

  it('recognises npx -y <package> command lines, and only those', () => {
    assert.deepEqual(recognizeNpx(['npx', '-y', '@scope/pkg@1.2.3', 'stdio', '--x']), {
      spec: '@scope/pkg@1.2.3',
      name: '@scope/pkg',
      args: ['stdio', '--x'],
    })
    assert.deepEqual(recognizeNpx(['/usr/bin/npx', '--yes', 'pkg']), {
      spec: 'pkg',
      name: 'pkg',
      args: [],
    })
    for (const other of [
      ['node', 'x.js'],
      ['npx', '-p', 'a', 'b'],
      ['npx', '-c', 'cmd'],
      ['npx'],
      ['npx', '-y', '../evil'],
    ])
      assert.equal(recognizeNpx(other), undefined, other.join(' '))
  })

  it('recognises uvx <package>[==version|@version] command lines, and only those', () => {
    assert.deepEqual(recognizeUvx(['uvx', 'mcp-server-fetch@2025.4.7', '--flag']), {
      requirement: 'mcp-server-fetch==2025.4.7',
      name: 'mcp-server-fetch',
      args: ['--flag'],
    })
    assert.deepEqual(recognizeUvx(['/usr/local/bin/uvx', '-q', 'Some_Pkg==1.0rc1']), {
      requirement: 'Some_Pkg==1.0rc1',
      name: 'Some_Pkg',
      args: [],
    })
    assert.deepEqual(recognizeUvx(['uvx', 'pkg']), {requirement: 'pkg', name: 'pkg', args: []})
    for (const other of [
      ['uv', 'run', 'x'],
      ['uvx', '--from', 'git+https://x', 'pkg'],
      ['uvx', '--with', 'a', 'b'],
      ['uvx'],
      ['uvx', '../evil'],
      ['uvx', 'pkg[extra]'],
      ['uvx', 'pkg>=1'],
      ['uvx', 'pkg==1==2'],
      ['uvx', 'pkg@1@2'],
      ['uvx', 'pkg==1.0; rm -rf /'],
      ['uvx', 'pkg @ https://x/pkg.whl'],
    ])
      assert.equal(recognizeUvx(other), undefined, other.join(' '))
  })

  it("finds a wheel's console script as uvx would, and refuses one with none", () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-pypi-'))
    try {
      const info = join(dir, 'My_Tool-1.0.dist-info')
      mkdirSync(info)
      writeFileSync(
        join(info, 'entry_points.txt'),
        '[gui_scripts]\nmy-tool-gui = x:y\n\n[console_scripts]\nhelper = a:b\nmy-tool = my_tool:main\n',
      )
      assert.equal(consoleScriptOf(dir, 'my.tool'), join(dir, 'bin', 'my-tool'))
      writeFileSync(join(info, 'entry_points.txt'), '[console_scripts]\nonly-one = a:b\n')
      assert.equal(consoleScriptOf(dir, 'my-tool'), join(dir, 'bin', 'only-one'))
      writeFileSync(join(info, 'entry_points.txt'), '[console_scripts]\n../../escape = a:b\n')
      assert.throws(() => consoleScriptOf(dir, 'my-tool'), /declares no command/)
      assert.throws(() => consoleScriptOf(dir, 'other'), /other declares no command/)
    } finally {
      rmSync(dir, {recursive: true, force: true})
    }
  })
})

/**
 * Runs `use` with an egress proxy that allows 127.0.0.1:<port> of a target server whose
 * connections `onConnection` handles; everything is closed after.
 */
async function withEgress(
  onConnection: (c: Socket) => void,
  use: (
    proxy: {connect: (options?: {allowHalfOpen?: boolean}) => Socket},
    port: number,
  ) => Promise<void>,
  limits?: {closeGraceMs?: number},
): Promise<void> {
  const target = createServer(onConnection)
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', () => r()))
  const port = (target.address() as {port: number}).port
  const proxy = startEgressProxy(
    parse({network: {outbound: {allow_host: ['127.0.0.1'], allow_port: [port]}}}),
    createMemoryLogger(),
    undefined,
    limits,
  )
  const listener = await proxy.serve({host: '127.0.0.1', port: 0})
  try {
    await use(
      {connect: (options) => connect({...options, host: '127.0.0.1', port: listener.port})},
      port,
    )
  } finally {
    await proxy.close()
    target.close()
  }
}

describe('the egress proxy against a sandbox that holds on', () => {
  it(
    'tunnels whose destination closed are closed after the grace, freeing their slots',
    {timeout: 20_000},
    () =>
      withEgress(
        (c) => c.end('bye'),
        async (proxy, port) => {
          // A client that reads everything but never closes its side (allowHalfOpen).
          const tunnel = () =>
            new Promise<{socket: Socket; text: string}>((resolve) => {
              const socket = proxy.connect({allowHalfOpen: true})
              socket.on('error', () => undefined)
              let text = ''
              socket.on('data', (d) => (text += d))
              socket.on('end', () => resolve({socket, text}))
              socket.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\nhost: x\r\n\r\n`)
            })
          const held = await Promise.all(Array.from({length: 64}, tunnel))
          assert.ok(held.every((t) => /Connection Established\r\n\r\nbye$/.test(t.text)))
          await new Promise((r) => setTimeout(r, 800))
          // All 64 slots were taken by half-open tunnels; after the grace, a new one is served.
          const next = await tunnel()
          assert.match(next.text, /^HTTP\/1\.1 200 Connection Established/)
          for (const t of [...held, next]) t.socket.destroy()
        },
        {closeGraceMs: 300},
      ),
  )

  it('requests pipelined on one connection: one is forwarded, then the connection closes', async () => {
    let connections = 0
    const requests: string[] = []
    await withEgress(
      (c) => {
        connections++
        c.on('error', () => undefined)
        c.on('data', (d) => requests.push(String(d)))
        c.once('data', () => c.end('HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nfirst'))
      },
      async (proxy, port) => {
        const s = proxy.connect()
        s.on('error', () => undefined)
        let text = ''
        s.on('data', (d) => (text += d))
        const closed = new Promise((r) => s.on('close', r))
        s.write(`GET http://127.0.0.1:${port}/ HTTP/1.1\r\nhost: x\r\n\r\n`.repeat(150))
        await closed
        // Nothing but the first response: a later one can never be read as the answer to another.
        assert.equal(text, 'HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nfirst')
        assert.equal(connections, 1)
        assert.equal(
          requests.join(''),
          'GET / HTTP/1.1\r\nhost: 127.0.0.1:' + port + '\r\nConnection: close\r\n\r\n',
        )
      },
    )
  })

  it('a relayed connection reads nothing more and closes after the response, however the client goes on', async () => {
    await withEgress(
      (c) => {
        c.on('error', () => undefined)
        c.once('data', () =>
          setTimeout(() => c.end('HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nfirst'), 400),
        )
      },
      async (proxy, port) => {
        // A client that never closes its side: only the proxy can end the connection.
        const s = proxy.connect({allowHalfOpen: true})
        s.on('error', () => undefined)
        let text = ''
        s.on('data', (d) => (text += d))
        const ended = new Promise((r) => s.on('end', r))
        const closed = new Promise((r) => s.on('close', () => r('closed')))
        s.write(`GET http://127.0.0.1:${port}/ HTTP/1.1\r\nhost: x\r\n\r\n`)
        // Bytes behind the request, while the destination has not answered: a proxy still
        // reading them would find them malformed and drop the connection before the answer.
        await new Promise((r) => setTimeout(r, 100))
        s.write('\u0000 not a request\r\n\r\n')
        await ended
        assert.equal(text, 'HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nfirst')
        // The proxy closed its end: what the client still sends meets a closed socket.
        await new Promise((r) => setTimeout(r, 100))
        s.write('GET http://x/ HTTP/1.1\r\n\r\n')
        const timeout = new Promise((r) => setTimeout(() => r('still open'), 1_000))
        assert.equal(await Promise.race([closed, timeout]), 'closed')
        s.destroy()
      },
    )
  })

  it('a body is forwarded with the framing it was parsed with, whatever the method', async () => {
    let received = ''
    await withEgress(
      (c) => {
        c.on('error', () => undefined)
        c.on('data', (d) => {
          received += d
          if (received.endsWith('0\r\n\r\n')) c.end('HTTP/1.1 204 No Content\r\n\r\n')
        })
      },
      async (proxy, port) => {
        const s = proxy.connect()
        let text = ''
        s.on('data', (d) => (text += d))
        const closed = new Promise((r) => s.on('close', r))
        // A GET body, chunked: written unframed, the destination would read "hello" as a request.
        s.write(
          `GET http://127.0.0.1:${port}/c HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`,
        )
        await closed
        assert.match(text, /^HTTP\/1\.1 204 No Content/)
        assert.match(received, /^GET \/c HTTP\/1\.1\r\n/)
        assert.match(received, /\r\ntransfer-encoding: chunked\r\n/i)
        assert.match(received, /\r\n\r\n5\r\nhello\r\n0\r\n\r\n$/)
      },
    )
  })

  it('connections are limited per sandbox and over all of them', async () => {
    const egress = startEgressProxy(builtinProfile('none'), createMemoryLogger(), undefined, {
      maxConnectionsInAll: 2,
    })
    const one = await egress.serve({host: '127.0.0.1', port: 0})
    const two = await egress.serve({host: '127.0.0.1', port: 0})
    const open = (port: number) =>
      new Promise<{socket: Socket; text: () => string}>((resolve) => {
        const socket = connect(port, '127.0.0.1', () => resolve({socket, text: () => text}))
        let text = ''
        socket.on('data', (d) => (text += d))
        socket.on('error', () => undefined)
      })
    try {
      const held = [await open(one.port), await open(two.port)]
      const third = await open(two.port)
      await new Promise((r) => setTimeout(r, 200))
      assert.match(third.text(), /^HTTP\/1\.1 503 Service Unavailable/)
      for (const h of held) assert.equal(h.text(), '')
      for (const c of [...held, third]) c.socket.destroy()
    } finally {
      await egress.close()
    }
  })

  it('plain http: 502 when the destination fails, 505 for HTTP/1.0, bodies forwarded exactly', async () => {
    const got: string[] = []
    await withEgress(
      (c) => {
        c.on('error', () => undefined)
        let text = ''
        c.on('data', (d) => {
          text += d
          if (text.startsWith('GET /silent')) return void c.end()
          if (/\r\n\r\n/.test(text) && (!/^POST/.test(text) || /0\r\n\r\n$|hello$/.test(text))) {
            got.push(text)
            c.end('HTTP/1.1 201 Created\r\ncontent-length: 0\r\n\r\n')
          }
        })
      },
      async (proxy, port) => {
        const exchange = (text: string) =>
          new Promise<string>((resolve) => {
            const s = proxy.connect()
            let out = ''
            s.on('data', (d) => (out += d))
            s.on('close', () => resolve(out))
            s.on('error', () => resolve(out))
            s.write(text)
          })
        const free = await freePort()
        const refused = await exchange(
          `GET http://127.0.0.1:${free}/ HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`,
        )
        assert.match(refused, /^HTTP\/1\.1 403/, 'a port the profile does not name')
        const silent = await exchange(
          `GET http://127.0.0.1:${port}/silent HTTP/1.1\r\nhost: x\r\n\r\n`,
        )
        assert.match(
          silent,
          /^HTTP\/1\.1 502 Bad Gateway\r\n[^]*the destination could not be reached/,
        )
        const old = await exchange(`GET http://127.0.0.1:${port}/ HTTP/1.0\r\nhost: x\r\n\r\n`)
        assert.match(old, /^HTTP\/1\.1 505 [^]*HTTP\/1\.1 requests only/)
        assert.match(
          await exchange(
            `POST http://127.0.0.1:${port}/a HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\nproxy-authorization: Basic eDp5\r\n\r\nhello`,
          ),
          /^HTTP\/1\.1 201 Created\r\n/,
        )
        assert.match(
          await exchange(
            `POST http://127.0.0.1:${port}/b HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`,
          ),
          /^HTTP\/1\.1 201 Created\r\n/,
        )
        assert.equal(got.length, 2)
        assert.equal(
          got[0],
          `POST /a HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-length: 5\r\nConnection: close\r\n\r\nhello`,
        )
        assert.match(got[1]!, /^POST \/b HTTP\/1\.1\r\n/)
        assert.match(got[1]!, /\r\n\r\n5\r\nhello\r\n0\r\n\r\n$/)
        assert.doesNotMatch(got.join(''), /proxy-authorization/i)
      },
    )
  })
})

describe('the relays carry every byte, in order, to a slow reader', () => {
  const payload = randomBytes(8 * 1024 * 1024)
  const digest = (b: Buffer) => createHash('sha256').update(b).digest('hex')

  /** Reads everything `socket` sends, stalling now and then (backpressure). */
  const slowRead = (socket: Socket) =>
    new Promise<Buffer>((resolve, reject) => {
      const parts: Buffer[] = []
      let seen = 0
      socket.on('data', (d: Buffer) => {
        parts.push(d)
        seen += d.length
        if (seen % (512 * 1024) < d.length) {
          socket.pause()
          setTimeout(() => socket.resume(), 5)
        }
      })
      socket.on('end', () => resolve(Buffer.concat(parts)))
      socket.on('error', reject)
    })

  it('through the egress proxy: a plain-http response, relayed as it came', () =>
    withEgress(
      (c) => {
        c.on('error', () => undefined)
        c.once('data', () => {
          c.write(`HTTP/1.1 200 OK\r\ncontent-length: ${payload.length}\r\n\r\n`)
          c.end(payload)
        })
      },
      async (proxy, port) => {
        const s = proxy.connect()
        s.write(`GET http://127.0.0.1:${port}/big HTTP/1.1\r\nhost: x\r\n\r\n`)
        const head = `HTTP/1.1 200 OK\r\ncontent-length: ${payload.length}\r\n\r\n`
        const got = await slowRead(s)
        assert.equal(got.subarray(0, head.length).toString(), head)
        assert.equal(got.length - head.length, payload.length)
        assert.equal(digest(got.subarray(head.length)), digest(payload))
      },
    ))

  it('through the egress proxy: CONNECT, the server speaking first', () =>
    withEgress(
      (c) => c.end(payload),
      async (proxy, port) => {
        const s = proxy.connect()
        s.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\nhost: x\r\n\r\n`)
        const established = 'HTTP/1.1 200 Connection Established\r\n\r\n'
        const got = await slowRead(s)
        assert.equal(got.subarray(0, established.length).toString(), established)
        assert.equal(got.length - established.length, payload.length)
        assert.equal(digest(got.subarray(established.length)), digest(payload))
      },
    ))
})

describe('loader variables never reach bwrap, setpriv or the init', () => {
  it('NODE_OPTIONS and LD_* are carried renamed; the init gives them back to the server', async () => {
    const sheltered = shelterLoaderEnv({
      NODE_OPTIONS: '--require /w/x.js',
      LD_PRELOAD: '/w/x.so',
      LD_LIBRARY_PATH: '/w',
      TOOLGATE_SANDBOX_ENV_PATH: '/injected',
      PATH: '/usr/bin:/bin',
      NODE_EXTRA_CA_CERTS: '/etc/ca.pem',
    })
    assert.deepEqual(sheltered, {
      TOOLGATE_SANDBOX_ENV_NODE_OPTIONS: '--require /w/x.js',
      TOOLGATE_SANDBOX_ENV_LD_PRELOAD: '/w/x.so',
      TOOLGATE_SANDBOX_ENV_LD_LIBRARY_PATH: '/w',
      PATH: '/usr/bin:/bin',
      NODE_EXTRA_CA_CERTS: '/etc/ca.pem',
    })
    const init = spawn(
      process.execPath,
      [
        '-e',
        `(${SANDBOX_INIT_SOURCE})(process.argv.slice(1))`,
        '--',
        '-',
        process.execPath,
        '-p',
        'JSON.stringify([process.env.LD_LIBRARY_PATH, process.env.TOOLGATE_SANDBOX_ENV_LD_LIBRARY_PATH])',
      ],
      {env: {TOOLGATE_SANDBOX_ENV_LD_LIBRARY_PATH: '/w'}, stdio: ['ignore', 'pipe', 'inherit']},
    )
    let out = ''
    init.stdout!.on('data', (d) => (out += d))
    await new Promise((r) => init.on('exit', r))
    assert.deepEqual(JSON.parse(out), ['/w', null])
  })
})

describe("the sandbox's init hands its listener to the egress proxy", () => {
  /** Starts the init (no sandbox around it: the handover is what is tested) with `server`. */
  const startInit = (port: number | '-', server: string) =>
    spawn(
      process.execPath,
      [
        '-e',
        `(${SANDBOX_INIT_SOURCE})(process.argv.slice(1))`,
        '--',
        String(port),
        process.execPath,
        '-e',
        server,
      ],
      {stdio: ['ignore', 'pipe', 'inherit', 'ipc']},
    )
  const output = (child: ReturnType<typeof spawn>) =>
    new Promise<string>((resolve) => {
      let out = ''
      child.stdout!.on('data', (d) => (out += d))
      child.on('exit', () => resolve(out))
    })

  it('the server reaches the egress proxy on its loopback port, and never holds the channel', () =>
    withEgress(
      (c) => c.end('from the destination'),
      async (_proxy, targetPort) => {
        const egress = startEgressProxy(
          parse({network: {outbound: {allow_host: ['127.0.0.1'], allow_port: [targetPort]}}}),
          createMemoryLogger(),
        )
        const port = await freePort()
        // The server: which descriptors beyond stdio it holds, then a CONNECT to the proxy.
        const init = startInit(
          port,
          `const fs = require('fs')
          const sockets = fs.readdirSync('/proc/self/fd').filter((fd) => {
            try { return fd > 2 && fs.readlinkSync('/proc/self/fd/' + fd).startsWith('socket:') } catch { return false }
          })
          const c = require('net').connect(${port}, '127.0.0.1')
          let text = ''
          c.on('data', (d) => (text += d))
          c.on('end', () => console.log(JSON.stringify({sockets, channel: process.env.NODE_CHANNEL_FD ?? null, send: typeof process.send, text})))
          c.write('CONNECT 127.0.0.1:${targetPort} HTTP/1.1\\r\\nhost: x\\r\\n\\r\\n')`,
        )
        acceptEgressListener(init, egress, createMemoryLogger())
        try {
          const seen = JSON.parse(await output(init)) as Record<string, unknown>
          assert.deepEqual(seen.sockets, [], 'no socket of the channel or the listener')
          assert.equal(seen.channel, null)
          assert.equal(seen.send, 'undefined')
          assert.equal(seen.text, 'HTTP/1.1 200 Connection Established\r\n\r\nfrom the destination')
        } finally {
          init.kill('SIGKILL')
          await egress.close()
        }
      },
    ))

  it('takes one listening socket and nothing else: other messages are dropped, the channel closed', async () => {
    const logger = createMemoryLogger()
    const egress = startEgressProxy(builtinProfile('none'), logger)
    const hostile = spawn(
      process.execPath,
      [
        '-e',
        `process.send({toolgate: 'something else'})
        process.on('disconnect', () => console.log('disconnected'))
        setTimeout(() => console.log('still connected'), 5000)`,
      ],
      {stdio: ['ignore', 'pipe', 'inherit', 'ipc']},
    )
    acceptEgressListener(hostile, egress, logger)
    const out = await new Promise<string>((resolve) =>
      hostile.stdout!.once('data', (d) => resolve(String(d))),
    )
    hostile.kill('SIGKILL')
    await egress.close()
    assert.equal(out.trim(), 'disconnected')
    assert.match(logger.lines.join('\n'), /unexpected message on its channel: ignored/)
  })

  it('the listener goes when the sandbox does (it would keep its network namespace alive)', async () => {
    const egress = startEgressProxy(builtinProfile('none'), createMemoryLogger())
    const port = await freePort()
    const init = startInit(port, 'setTimeout(() => {}, 400)')
    acceptEgressListener(init, egress, createMemoryLogger())
    const reach = () =>
      new Promise<boolean>((resolve) => {
        const c = connect(port, '127.0.0.1', () => {
          c.destroy()
          resolve(true)
        })
        c.on('error', () => resolve(false))
      })
    try {
      let served = false
      for (let i = 0; i < 50 && !served; i++) {
        served = await reach()
        if (!served) await new Promise((r) => setTimeout(r, 20))
      }
      assert.ok(served, 'served while the sandbox runs')
      await new Promise((r) => init.on('exit', r))
      let closed = false
      for (let i = 0; i < 50 && !closed; i++) {
        closed = !(await reach())
        if (!closed) await new Promise((r) => setTimeout(r, 20))
      }
      assert.ok(closed, 'nobody listens once it exited')
    } finally {
      init.kill('SIGKILL')
      await egress.close()
    }
  })

  it('without a channel the init refuses to start the server', async () => {
    const init = spawn(
      process.execPath,
      ['-e', `(${SANDBOX_INIT_SOURCE})(process.argv.slice(1))`, '--', '3128', '/bin/true'],
      {stdio: ['ignore', 'ignore', 'pipe']},
    )
    let err = ''
    init.stderr!.on('data', (d) => (err += d))
    const code = await new Promise((resolve) => init.on('exit', resolve))
    assert.equal(code, 126)
    assert.match(err, /toolgate sandbox: no channel to toolgate for the egress proxy/)
  })
})
