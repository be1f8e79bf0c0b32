/**
 * `npm install -g toolgate` works: `npm pack` of a copy of the checkout (its prepack builds dist/
 * there, never in the checkout the other tests run from) holds only the runtime files, and
 * installing the tarball into a clean prefix gives a `toolgate` that runs on the toolchain Node.
 * Dependencies come from the npm registry through npm's cache, as a user's install would.
 */
import assert from 'node:assert/strict'
import {execFileSync} from 'node:child_process'
import {cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {dirname, join} from 'node:path'
import {after, before, describe, test} from 'node:test'
import {NODE, ROOT, run, VERSION} from '../binary/binary-helpers.ts'

const npmEnv = (extra: Record<string, string> = {}) => ({
  ...process.env,
  // The pinned Node first: npm's lifecycle scripts (prepack: tsc + oclif manifest) and the
  // installed `toolgate` shebang both run on it.
  PATH: `${dirname(NODE)}:${process.env.PATH ?? '/usr/bin:/bin'}`,
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  npm_config_update_notifier: 'false',
  ...extra,
})

describe('npm package', () => {
  const work = mkdtempSync(join(tmpdir(), 'toolgate-pack-'))
  let tarball: string
  let files: string[]
  after(() => rmSync(work, {recursive: true, force: true}))

  before(
    () => {
      // The tracked files only, with the installed node_modules linked in for the build tools.
      const copy = join(work, 'src')
      const tracked = execFileSync('git', ['ls-files', '-z'], {cwd: ROOT, encoding: 'utf8'})
        .split('\0')
        .filter(Boolean)
      for (const f of tracked) {
        mkdirSync(dirname(join(copy, f)), {recursive: true})
        cpSync(join(ROOT, f), join(copy, f))
      }
      symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'))
      const out = execFileSync(
        'npm',
        ['pack', '--json', '--pack-destination', work, '--foreground-scripts=false'],
        {
          cwd: copy,
          encoding: 'utf8',
          env: npmEnv(),
          stdio: ['ignore', 'pipe', 'pipe'],
          timeout: 300_000,
        },
      )
      const [info] = JSON.parse(out.slice(out.indexOf('['))) as [
        {filename: string; files: {path: string}[]},
      ]
      tarball = join(work, info.filename)
      files = info.files.map((f) => f.path).sort()
    },
    {timeout: 300_000},
  )

  test('holds the runtime files only: bin, compiled dist, manifest; no sources, tests, maps or scripts', () => {
    assert.ok(files.includes('bin/run.js'))
    assert.ok(files.includes('dist/cli.js'))
    assert.ok(files.includes('dist/index.js'))
    assert.ok(files.includes('oclif.manifest.json'))
    assert.ok(files.includes('package.json'))
    const allowed =
      /^(bin\/(run|launch)\.js|dist\/.+\.(js|d\.ts)|oclif\.manifest\.json|package\.json|README\.md|LICENSE)$/
    for (const f of files) assert.match(f, allowed, `unexpected file in the package: ${f}`)
    for (const f of files) assert.doesNotMatch(f, /(^|\/)(test|tests|src|scripts|bench)\//, f)
  })

  test(
    'installs into a clean prefix with npm install -g and runs --version, version --json, --help',
    {timeout: 600_000},
    async () => {
      const prefix = join(work, 'prefix')
      const home = join(work, 'home')
      mkdirSync(home)
      execFileSync('npm', ['install', '-g', '--prefix', prefix, '--prefer-offline', tarball], {
        cwd: work,
        env: npmEnv({HOME: home, npm_config_cache: join(process.env.HOME ?? home, '.npm')}),
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: 600_000,
      })
      const bin = join(prefix, 'bin', 'toolgate')
      const env = {PATH: `${dirname(NODE)}:/usr/bin:/bin`, HOME: home}
      const v = await run(bin, ['--version'], {cwd: home, env})
      assert.equal(v.code, 0, v.stderr)
      assert.match(v.stdout, new RegExp(`^toolgate/${VERSION.replaceAll('.', '\\.')} `))
      const json = await run(bin, ['version', '--json'], {cwd: home, env})
      assert.equal(json.code, 0, json.stderr)
      assert.equal((JSON.parse(json.stdout) as {version: string}).version, VERSION)
      const help = await run(bin, ['--help'], {cwd: home, env})
      assert.equal(help.code, 0, help.stderr)
      for (const cmd of ['serve', 'proxy', 'secret', 'version'])
        assert.match(help.stdout, new RegExp(`\\b${cmd}\\b`))
      // The installed package runs its compiled dist/, not TypeScript sources.
      const serveHelp = await run(bin, ['serve', '--help'], {cwd: home, env})
      assert.equal(serveHelp.code, 0, serveHelp.stderr)
      assert.match(serveHelp.stdout, /\$ toolgate serve/)
    },
  )
})
