/**
 * install.sh against a local release server holding the built artifacts (the shared
 * `build:binaries` release): a fresh HOME installs into ~/.local/bin and `toolgate --version`
 * runs; a tampered archive, a wrong --version, a missing SHA256SUMS and bad arguments abort with a
 * clear message and install nothing. Run with dash, the POSIX sh of Debian.
 */
import assert from 'node:assert/strict'
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import {createServer, type Server} from 'node:http'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'
import {needs} from '../helpers/component.ts'
import {
  have,
  ROOT,
  run,
  seaUnsupportedReason,
  sharedRelease,
  VERSION,
} from '../binary/binary-helpers.ts'

const ARCHIVE = `toolgate-${VERSION}-linux-x64.tar.gz`

/** A static file server for one directory per URL prefix (`/good/…`, `/tampered/…`), loopback only. */
function serveDirs(dirs: Record<string, string>): Promise<{server: Server; url: string}> {
  const server = createServer((req, res) => {
    const [, prefix, name, ...extra] = (req.url ?? '').split('/')
    const dir = dirs[prefix ?? '']
    if (!dir || !name || extra.length > 0 || name.startsWith('.') || !existsSync(join(dir, name))) {
      res.writeHead(404).end('not found')
      return
    }
    res
      .writeHead(200, {'content-type': 'application/octet-stream'})
      .end(readFileSync(join(dir, name)))
  })
  server.requestTimeout = 60_000
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address() as {port: number}
      resolve({server, url: `http://127.0.0.1:${addr.port}`})
    }),
  )
}

const shell = have('dash') ? 'dash' : 'sh'

describe('install.sh', {skip: needs('a linux-x64 build machine', seaUnsupportedReason())}, () => {
  let work: string
  let url: string
  let server: Server
  before(
    async () => {
      const release = await sharedRelease()
      work = mkdtempSync(join(tmpdir(), 'toolgate-install-'))
      // A release directory with the real SHA256SUMS and one byte of the archive flipped.
      const tampered = join(work, 'tampered')
      mkdirSync(tampered)
      copyFileSync(join(release, 'SHA256SUMS'), join(tampered, 'SHA256SUMS'))
      const bytes = readFileSync(join(release, ARCHIVE))
      bytes[bytes.length >> 1] = bytes[bytes.length >> 1]! ^ 0xff
      writeFileSync(join(tampered, ARCHIVE), bytes)
      const empty = join(work, 'empty')
      mkdirSync(empty)
      ;({server, url} = await serveDirs({good: release, tampered, empty}))
    },
    {timeout: 900_000},
  )
  after(() => {
    server?.close()
    if (work) rmSync(work, {recursive: true, force: true})
  })

  const freshHome = () => mkdtempSync(join(work, 'home-'))
  const install = (home: string, args: string[], env: Record<string, string> = {}) =>
    run(shell, [join(ROOT, 'install.sh'), ...args], {
      cwd: home,
      env: {PATH: '/usr/bin:/bin', HOME: home, ...env},
      timeoutMs: 120_000,
    })

  test('installs into ~/.local/bin of a fresh HOME, and the installed toolgate runs', async () => {
    const home = freshHome()
    const r = await install(home, ['--base-url', `${url}/good`])
    assert.equal(r.code, 0, r.stderr)
    const bin = join(home, '.local', 'bin', 'toolgate')
    assert.match(r.stdout, new RegExp(`^installed toolgate-${VERSION}-linux-x64 to ${bin}\\n`))
    assert.match(r.stdout, /is not on PATH/)
    assert.deepEqual(readdirSync(join(home, '.local', 'bin')), ['toolgate'])
    const v = await run(bin, ['--version'], {cwd: home, env: {PATH: '/usr/bin:/bin', HOME: home}})
    assert.equal(v.code, 0, v.stderr)
    assert.match(
      v.stdout,
      new RegExp(`^toolgate/${VERSION.replaceAll('.', '\\.')} linux-x64 node-v`),
    )
  })

  test('TOOLGATE_INSTALL_BASE_URL, --version and --prefix select source, release and directory', async () => {
    const home = freshHome()
    const prefix = join(home, 'opt', 'bin')
    const r = await install(home, ['--version', VERSION, '--prefix', prefix], {
      TOOLGATE_INSTALL_BASE_URL: `${url}/good/`,
    })
    assert.equal(r.code, 0, r.stderr)
    assert.deepEqual(readdirSync(prefix), ['toolgate'])
    assert.equal(existsSync(join(home, '.local')), false)
  })

  test('a tampered archive is refused with a checksum message and nothing is installed', async () => {
    const home = freshHome()
    const r = await install(home, ['--base-url', `${url}/tampered`])
    assert.equal(r.code, 1)
    assert.match(
      r.stderr,
      new RegExp(
        `^install\\.sh: checksum mismatch for ${ARCHIVE.replaceAll('.', '\\.')}: SHA256SUMS says [0-9a-f]{64}, the download is [0-9a-f]{64}\\. Nothing was installed\\.\\n$`,
      ),
    )
    assert.equal(existsSync(join(home, '.local')), false, 'no install directory was created')
    assert.equal(r.stdout, '')
  })

  for (const [why, args, message] of [
    [
      'a release that is not there',
      ['--version', '9.9.9'],
      /lists no toolgate 9\.9\.9 archive for linux-x64/,
    ],
    ['a server without SHA256SUMS', [], /could not download .*\/empty\/SHA256SUMS/],
    [
      'a version that is not a version',
      ['--version', '1.0.0;rm'],
      /characters a version never has/,
    ],
    ['a base URL that is not http(s)', ['--base-url', 'file:///etc'], /must be an http\(s\) URL/],
    [
      'a plain-http base URL on another host',
      ['--base-url', 'http://downloads.example.invalid/toolgate'],
      /is plain http: anyone on the network path could replace the download .* pass --insecure/,
    ],
    [
      'plain http that only looks like loopback (userinfo)',
      ['--base-url', 'http://127.0.0.1:80@downloads.example.invalid/'],
      /is plain http/,
    ],
    [
      'plain http to a loopback-looking name',
      ['--base-url', 'http://localhost.example.invalid/'],
      /is plain http/,
    ],
    [
      '--insecure lets plain http through to the download (which then fails here)',
      ['--insecure', '--base-url', 'http://downloads.example.invalid/toolgate'],
      /could not download http:\/\/downloads\.example\.invalid\/toolgate\/SHA256SUMS/,
    ],
    ['an unknown argument', ['--frobnicate'], /unknown argument: --frobnicate/],
  ] as const) {
    test(`${why}: a clear error, exit 1, nothing installed`, async () => {
      const home = freshHome()
      const base = why === 'a server without SHA256SUMS' ? `${url}/empty` : `${url}/good`
      const r = await install(home, [
        ...((args as readonly string[]).includes('--base-url') ? [] : ['--base-url', base]),
        ...args,
      ])
      assert.equal(r.code, 1, r.stdout)
      assert.match(r.stderr, message)
      assert.equal(existsSync(join(home, '.local')), false)
    })
  }

  test('is POSIX sh: dash parses it without bashisms (sh -n) and --help answers', async () => {
    const syntax = await run(shell, ['-n', join(ROOT, 'install.sh')], {
      cwd: ROOT,
      env: {PATH: '/usr/bin:/bin'},
    })
    assert.equal(syntax.code, 0, syntax.stderr)
    const help = await install(freshHome(), ['--help'])
    assert.equal(help.code, 0)
    assert.match(help.stdout, /^Usage: install\.sh /)
  })
})
