import assert from 'node:assert/strict'
import {mkdtemp, readdir, readFile, stat, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {describe, it} from 'node:test'
import {
  findRunningWorkload,
  listWorkloads,
  pidAlive,
  readWorkload,
  removeWorkload,
  validateWorkloadName,
  workloadsDir,
  writeWorkload,
  type WorkloadState,
} from '../../../src/lib/workloads/state.ts'

async function freshEnv(): Promise<NodeJS.ProcessEnv> {
  return {HOME: await mkdtemp(join(tmpdir(), 'tg-wl-')), XDG_STATE_HOME: ''}
}

function sample(name: string, extra: Partial<WorkloadState> = {}): WorkloadState {
  const now = new Date().toISOString()
  return {
    name,
    status: 'running',
    transport: 'stdio',
    baseUrl: 'http://127.0.0.1:4000',
    url: 'http://127.0.0.1:4000/mcp',
    host: '127.0.0.1',
    port: 4000,
    incomingAuth: false,
    supervisorPid: process.pid,
    createdAt: now,
    updatedAt: now,
    ...extra,
  }
}

describe('workload state', () => {
  it('refuses names that could leave the state directory or break a URL', () => {
    for (const bad of ['../x', 'a/b', '', '-a', 'a-', 'A', 'a'.repeat(64), 'a b', 'a.json', '..']) {
      assert.throws(() => validateWorkloadName(bad), {code: 'ERR_USAGE'}, bad)
    }
    assert.equal(validateWorkloadName('weather-2'), 'weather-2')
  })

  it('writes 0600 files in a 0700 directory and reads them back', async () => {
    const env = await freshEnv()
    await writeWorkload(sample('weather'), env)
    const dir = workloadsDir(env)
    assert.equal((await stat(dir)).mode & 0o777, 0o700)
    assert.equal((await stat(join(dir, 'weather.json'))).mode & 0o777, 0o600)
    assert.equal((await readWorkload('weather', env))?.url, 'http://127.0.0.1:4000/mcp')
    assert.equal(await readWorkload('nothing', env), undefined)
    assert.deepEqual(
      (await listWorkloads(env)).map((w) => w.name),
      ['weather'],
    )
    await removeWorkload('weather', env)
    assert.deepEqual(await readdir(dir), [])
  })

  it('reports a damaged state file with its path and the way out', async () => {
    const env = await freshEnv()
    await writeWorkload(sample('broken'), env)
    await writeFile(join(workloadsDir(env), 'broken.json'), '{"name": "broken", ')
    await assert.rejects(readWorkload('broken', env), (err: Error & {code?: string}) => {
      assert.equal(err.code, 'ERR_STORAGE')
      assert.match(err.message, /broken\.json: workload state is damaged/)
      assert.match(err.message, /toolgate rm --force broken/)
      return true
    })
  })

  it('finds a running workload and refuses stale, exited or unknown ones', async () => {
    const env = await freshEnv()
    await writeWorkload(sample('live'), env)
    assert.equal((await findRunningWorkload('live', env)).port, 4000)
    // A PID that no longer exists: the recorded "running" is stale.
    await writeWorkload(sample('stale', {supervisorPid: 2 ** 22 + 12345}), env)
    await assert.rejects(
      findRunningWorkload('stale', env),
      /is not running \(its process is gone\)/,
    )
    await writeWorkload(sample('done', {status: 'exited', exitCode: 3}), env)
    await assert.rejects(findRunningWorkload('done', env), /exited \(code 3\)/)
    await assert.rejects(findRunningWorkload('ghost', env), {code: 'ERR_NOT_FOUND'})
    assert.equal(pidAlive(process.pid), true)
    assert.equal(pidAlive(0), false)
    assert.ok((await readFile(join(workloadsDir(env), 'live.json'), 'utf8')).endsWith('\n'))
  })
})
