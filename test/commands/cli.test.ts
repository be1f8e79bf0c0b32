import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import {cpSync, existsSync, mkdtempSync, rmSync, symlinkSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {closestCommand, editDistance, preflight} from '../../src/lib/cli/argv.ts'
import {COMMANDS} from '../../src/index.ts'
import {nodeTooOld} from '../../bin/launch.js'

/**
 * The CLI as a new user meets it (issue 18): every help and version spelling, the closest command
 * for a typo, `--json` errors, an old Node, and bin/run.js in a fresh clone (no dist/).
 */
const root = join(import.meta.dirname, '..', '..')
const home = mkdtempSync(join(tmpdir(), 'toolgate-cli-'))
process.on('exit', () => rmSync(home, {recursive: true, force: true}))

function cli(args: string[], opts: {bin?: string; nodeArgs?: string[]} = {}) {
  const r = spawnSync(
    process.execPath,
    [...(opts.nodeArgs ?? []), join(root, 'bin', opts.bin ?? 'run.js'), ...args],
    {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
      env: {
        PATH: process.env.PATH,
        HOME: home,
        XDG_CONFIG_HOME: join(home, 'c'),
        XDG_DATA_HOME: join(home, 'd'),
        XDG_STATE_HOME: join(home, 's'),
        XDG_CACHE_HOME: join(home, 'k'),
        CI: 'true',
      },
    },
  )
  return {code: r.status, stdout: r.stdout, stderr: r.stderr}
}

describe('help and version', () => {
  it('root help: help, -h, --help and no arguments all list the commands', () => {
    for (const args of [['help'], ['-h'], ['--help'], []]) {
      const r = cli(args)
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`)
      assert.match(r.stdout, /COMMANDS/, args.join(' '))
      assert.match(r.stdout, /serve/)
      assert.match(r.stdout, /secret/)
      assert.doesNotMatch(r.stderr, /\bat \w/, 'no stack trace')
    }
  })

  it('command help: help <cmd>, <cmd> -h and <cmd> --help, with topics spelled with a space', () => {
    for (const args of [
      ['help', 'secret', 'get'],
      ['secret', 'get', '-h'],
      ['secret', 'get', '--help'],
    ]) {
      const r = cli(args)
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`)
      assert.match(r.stdout, /\$ toolgate secret get NAME/, args.join(' '))
      assert.doesNotMatch(r.stdout, /secret:get/)
    }
    const serve = cli(['help', 'serve'])
    assert.match(serve.stdout, /\$ toolgate serve/)
  })

  it('version: version, -v and --version print the same line', () => {
    const lines = [['version'], ['-v'], ['--version']].map((args) => {
      const r = cli(args)
      assert.equal(r.code, 0, r.stderr)
      return r.stdout
    })
    const platform = `${process.platform}-${process.arch}`
    assert.match(
      lines[0]!,
      new RegExp(
        `^toolgate/\\d+\\.\\d+\\.\\d+ ${platform} node-v[\\d.]+ commit \\S+ built \\S+\\n$`,
      ),
    )
    assert.deepEqual(new Set(lines).size, 1)
  })

  it('version --json (and --version --json) print version, commit, build date, platform and Node', () => {
    for (const args of [
      ['version', '--json'],
      ['--version', '--json'],
    ]) {
      const r = cli(args)
      assert.equal(r.code, 0, r.stderr)
      const info = JSON.parse(r.stdout) as Record<string, string>
      assert.deepEqual(Object.keys(info).sort(), [
        'build_date',
        'commit',
        'event',
        'node_version',
        'platform',
        'version',
      ])
      assert.equal(info.node_version, process.version)
      assert.equal(info.platform, `${process.platform}/${process.arch}`)
    }
  })
})

describe('unknown commands', () => {
  it('suggest the closest command, with a space separator, exit 2', () => {
    const cases: Array<[string[], string]> = [
      [['sever'], 'toolgate serve'],
      [['prxy'], 'toolgate proxy'],
      [['secret', 'gt'], 'toolgate secret get'],
      [['secret', 'lst'], 'toolgate secret list'],
      [['help', 'sever'], 'toolgate serve'],
    ]
    for (const [args, suggestion] of cases) {
      const r = cli(args)
      assert.equal(r.code, 2, args.join(' '))
      assert.equal(r.stdout, '')
      assert.ok(r.stderr.includes(`Did you mean "${suggestion}"?`), r.stderr)
      assert.doesNotMatch(r.stderr, /\w:\w+ not found|\bat \w/)
    }
    const far = cli(['zzzzzzzzzz'])
    assert.equal(far.code, 2)
    assert.match(far.stderr, /"zzzzzzzzzz" is not a toolgate command\. Run "toolgate help"/)
  })

  it('the edit distance and suggestion rules', () => {
    assert.equal(editDistance('', 'abc'), 3)
    assert.equal(editDistance('kitten', 'sitting'), 3)
    assert.equal(editDistance('serve', 'serve'), 0)
    assert.equal(closestCommand('srve', ['serve', 'proxy']), 'serve')
    assert.equal(closestCommand('qqqqqq', ['serve', 'proxy']), undefined)
    const ids = Object.keys(COMMANDS)
    // Every real command passes through untouched, with its arguments.
    for (const id of ids) {
      const argv = [...id.split(':'), 'arg', '--flag']
      assert.deepEqual(preflight(argv, ids), {kind: 'run', argv})
    }
    assert.deepEqual(preflight(['help', 'secret', 'set'], ids), {
      kind: 'run',
      argv: ['secret', 'set', '--help'],
    })
  })
})

describe('--json applies to errors', () => {
  it('one JSON object on stderr with error and code, for toolgate and oclif errors alike', () => {
    const cases: Array<[string[], string, number]> = [
      [['serve', '--config', join(home, 'missing.yaml'), '--json'], 'ERR_CONFIG_NOT_FOUND', 78],
      [['secret', 'get', '--json'], 'ERR_USAGE', 2],
      [['secret', 'get', 'x', '--bogus', '--json'], 'ERR_USAGE', 2],
      [['sever', '--json'], 'ERR_USAGE', 2],
    ]
    for (const [args, code, exit] of cases) {
      const r = cli(args)
      assert.equal(r.code, exit, `${args.join(' ')}: ${r.stderr}`)
      const lines = r.stderr.trim().split('\n')
      assert.equal(lines.length, 1, r.stderr)
      const obj = JSON.parse(lines[0]!)
      assert.equal(obj.code, code)
      assert.equal(typeof obj.error, 'string')
    }
  })
})

describe('launching', () => {
  it('a Node older than engines gets one clear line and exit 69', () => {
    const r = cli(['--version'], {
      nodeArgs: [
        '--import',
        'data:text/javascript,Object.defineProperty(process.versions,"node",{value:"22.15.9"})',
      ],
    })
    assert.equal(r.code, 69)
    assert.equal(r.stdout, '')
    const lines = r.stderr.trim().split('\n')
    assert.equal(lines.length, 1, r.stderr)
    // 22.16: node:sqlite's StatementSync.setReturnArrays, which the registry store reads with.
    assert.match(lines[0]!, /^toolgate: needs Node\.js >=22\.16, but this is Node\.js 22\.15\.9/)
    assert.equal(nodeTooOld('22.13.0', '>=22.13'), false)
    assert.equal(nodeTooOld('24.1.0', '>=22.13'), false)
    assert.equal(nodeTooOld('20.20.2', '>=22.13'), true)
    assert.equal(nodeTooOld('22.9.0', '>=22.13'), true)
  })

  it('bin/run.js works in a fresh clone (no dist/): it runs the TypeScript sources', () => {
    // A clone after `npm ci`: the tracked files and node_modules, nothing built.
    const clone = join(home, 'clone')
    for (const part of ['bin', 'src', 'package.json'])
      cpSync(join(root, part), join(clone, part), {recursive: true})
    symlinkSync(join(root, 'node_modules'), join(clone, 'node_modules'))
    assert.equal(existsSync(join(clone, 'dist')), false)
    const r = spawnSync(
      process.execPath,
      [join(clone, 'bin', 'run.js'), 'secret', 'list', '--json'],
      {
        encoding: 'utf8',
        timeout: 60_000,
        env: {
          PATH: process.env.PATH,
          HOME: home,
          XDG_CONFIG_HOME: join(home, 'c2'),
          XDG_DATA_HOME: join(home, 'd2'),
          CI: 'true',
        },
      },
    )
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout), {event: 'secrets', names: []})
  })
})

describe('long flag lists', () => {
  it('every command with more than 8 flags of its own puts each optional one in a help group', () => {
    type Cmd = {flags?: Record<string, {helpGroup?: string; required?: boolean}>}
    for (const [id, cmd] of Object.entries(COMMANDS as Record<string, Cmd>)) {
      const own = Object.entries(cmd.flags ?? {})
      if (own.length <= 8) continue
      // A required flag may stay in the first, ungrouped FLAGS block, where it is seen first.
      const loose = own.filter(([, f]) => !f.helpGroup && !f.required).map(([name]) => `--${name}`)
      assert.deepEqual(loose, [], `${id.replaceAll(':', ' ')}: flags without helpGroup`)
    }
    const r = cli(['auth', 'token', '--help'])
    assert.match(r.stdout, /OUTGOING AUTH FLAGS/)
  })
})
