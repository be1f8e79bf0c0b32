/**
 * The background process of a detached run (`run --workload-child`) starts without oclif or any
 * other command's libraries (issue 11: a workload's resident memory), reads its request from
 * stdin, and fails the way a command fails when the request is not one `run` would send.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {mkdtemp, readFile, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {Readable} from 'node:stream'
import {fileURLToPath} from 'node:url'
import {readChildRequest} from '../../../src/lib/workloads/child-argv.ts'
import {isWorkloadChild} from '../../../src/lib/workloads/child-flag.ts'
import {runCli} from '../../helpers/proxy-run.ts'
import {mcpClient, textOf, UNRULY} from '../../helpers/workload.ts'

const ROOT = fileURLToPath(new URL('../../..', import.meta.url))
const HOOK = join(ROOT, 'test', 'helpers', 'record-packages.mjs')

async function child(
  stdin: string,
): Promise<{code: number | null; stderr: string; packages: string[]}> {
  const dir = await mkdtemp(join(tmpdir(), 'toolgate-child-'))
  const record = join(dir, 'packages.txt')
  try {
    const proc = spawn(
      process.execPath,
      ['--import', HOOK, join(ROOT, 'bin', 'dev.js'), 'run', '--workload-child'],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH,
          HOME: dir,
          XDG_STATE_HOME: join(dir, 'state'),
          XDG_DATA_HOME: join(dir, 'data'),
          XDG_CONFIG_HOME: join(dir, 'config'),
          RECORD_PACKAGES: record,
        },
        stdio: ['pipe', 'ignore', 'pipe'],
      },
    )
    let stderr = ''
    proc.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    proc.stdin.end(stdin)
    const code = await new Promise<number | null>((resolve) => proc.on('exit', resolve))
    const packages = (await readFile(record, 'utf8').catch(() => '')).split('\n').filter(Boolean)
    return {code, stderr, packages}
  } finally {
    await rm(dir, {recursive: true, force: true})
  }
}

describe('the background process of a detached run', () => {
  it('is recognised by its exact arguments only', () => {
    assert.equal(isWorkloadChild(['run', '--workload-child']), true)
    assert.equal(isWorkloadChild(['run', '--workload-child', 'x']), false)
    assert.equal(isWorkloadChild(['run', 'x', '--workload-child']), false)
    assert.equal(isWorkloadChild(['serve', '--workload-child']), false)
  })

  it('refuses a request that is not what run sends: exit 2 with the reason, and no oclif loaded', async () => {
    const {code, stderr, packages} = await child('["run","x"]')
    assert.equal(code, 2, stderr)
    assert.match(
      stderr,
      /^Error: --workload-child: expected \{"name","rest","flags"\} as JSON on stdin/,
    )
    assert.ok(!packages.includes('@oclif/core'), `loaded: ${packages.join(', ')}`)
    // The hook records what loads: the child's own entry proves it saw the child's imports.
    assert.ok(
      packages.includes('src/lib/workloads/child-main.ts'),
      `loaded: ${packages.join(', ')}`,
    )
  })

  it('serving a plain stdio workload loads no HTTP client library, and no OAuth, token or CLI library', async () => {
    const home = await mkdtemp(join(tmpdir(), 'toolgate-lean-'))
    const record = join(home, 'packages.txt')
    const env = {
      NODE_OPTIONS: `--import=${HOOK}`,
      RECORD_PACKAGES: record,
      RECORD_PACKAGES_IF_ARG: '--workload-child',
    }
    try {
      const run = runCli(['run', 'lean', '--json', '--', ...UNRULY], home, env)
      assert.equal(await run.exited, 0, run.stderr())
      const client = await mcpClient((JSON.parse(run.stdout()) as {url: string}).url)
      assert.equal(
        textOf(await client.callTool({name: 'env', arguments: {name: 'NOPE'}})),
        '(unset)',
      )
      await client.close()
      const packages = (await readFile(record, 'utf8')).split('\n').filter(Boolean)
      // It reached the bridge over node:http (the hook saw the pipeline's imports); undici is
      // for public targets only (socket-dispatcher.ts).
      for (const used of ['src/lib/bridge/bridge-server.ts', 'src/lib/proxy/socket-dispatcher.ts'])
        assert.ok(packages.includes(used), `${used} not loaded: ${packages.join(', ')}`)
      for (const heavy of ['@oclif/core', 'jose', 'oauth4webapi', 'open', 'yaml', 'undici']) {
        assert.ok(!packages.includes(heavy), `${heavy} loaded: ${packages.join(', ')}`)
      }
    } finally {
      await runCli(['stop', 'lean'], home).exited
      await rm(home, {recursive: true, force: true})
    }
  })

  it('reads the request from stdin, bounded and checked', async () => {
    const request = {
      name: 'w',
      rest: ['--', 'node'],
      flags: {json: false, debug: true},
      addedEnv: ['GLIBC_TUNABLES'],
    }
    assert.deepEqual(
      await readChildRequest(Readable.from([Buffer.from(JSON.stringify(request))])),
      request,
    )
    for (const bad of [
      '',
      'not json',
      '{}',
      '{"name":"w","rest":[1],"flags":{}}',
      '{"name":"w","rest":[],"flags":{"json":"yes","debug":false}}',
      '{"name":"w","rest":[],"flags":{"json":false,"debug":false},"addedEnv":"GLIBC_TUNABLES"}',
      '{"name":"w","rest":[],"flags":{"json":false,"debug":false},"addedEnv":[1]}',
    ]) {
      await assert.rejects(
        readChildRequest(Readable.from([Buffer.from(bad)])),
        /expected \{"name","rest","flags"\}/,
        bad,
      )
    }
    await assert.rejects(
      readChildRequest(Readable.from([Buffer.alloc(1024 * 1024 + 1, 0x20)])),
      /workload arguments too long/,
    )
  })
})
