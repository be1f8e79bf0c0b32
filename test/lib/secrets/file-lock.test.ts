import {after, describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {mkdtemp, readFile, rm, stat, writeFile} from 'node:fs/promises'
import {hostname, tmpdir} from 'node:os'
import {join} from 'node:path'
import {acquireFileLock, withFileLock} from '../../../src/lib/secrets/file-lock.ts'
import {isToolgateError} from '../../../src/lib/errors.ts'

const dirs: string[] = []
after(async () => {
  for (const d of dirs) await rm(d, {recursive: true, force: true})
})
async function tempDir() {
  const d = await mkdtemp(join(tmpdir(), 'toolgate-lock-'))
  dirs.push(d)
  return d
}

/** The pid of a process that has certainly exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], {stdio: 'ignore'})
  await new Promise((r) => child.once('exit', r))
  return child.pid as number
}

describe('file lock', () => {
  it('serialises read-modify-write sections so no update is lost', async () => {
    const dir = await tempDir()
    const counter = join(dir, 'counter')
    await writeFile(counter, '0')
    await Promise.all(
      Array.from({length: 20}, () =>
        withFileLock(join(dir, 'counter.lock'), async () => {
          const n = Number(await readFile(counter, 'utf8'))
          await new Promise((r) => setTimeout(r, 2))
          await writeFile(counter, String(n + 1))
        }),
      ),
    )
    assert.equal(await readFile(counter, 'utf8'), '20')
  })

  it('removes the lock file when released', async () => {
    const dir = await tempDir()
    const lock = join(dir, 'x.lock')
    await withFileLock(lock, async () => {
      await stat(lock)
    })
    await assert.rejects(stat(lock), {code: 'ENOENT'})
  })

  it('breaks a lock left behind by a process that no longer exists', async () => {
    const dir = await tempDir()
    const lock = join(dir, 'x.lock')
    await writeFile(lock, `${await deadPid()} ${hostname()} ${Date.now()} deadbeef\n`)
    const release = await acquireFileLock(lock, {timeoutMs: 5_000})
    assert.match(await readFile(lock, 'utf8'), new RegExp(`^${process.pid} `))
    await release()
  })

  it('breaks a lock older than the stale age even if its owner looks alive', async () => {
    const dir = await tempDir()
    const lock = join(dir, 'x.lock')
    await writeFile(lock, `${process.pid} ${hostname()} 0 cafebabe\n`)
    await new Promise((r) => setTimeout(r, 60))
    const release = await acquireFileLock(lock, {timeoutMs: 5_000, staleMs: 10})
    await release()
  })

  it('gives up with ERR_SECRET_BUSY when a live holder keeps the lock past the timeout', async () => {
    const dir = await tempDir()
    const lock = join(dir, 'x.lock')
    const release = await acquireFileLock(lock)
    try {
      await assert.rejects(acquireFileLock(lock, {timeoutMs: 200}), (err) =>
        isToolgateError(err, 'ERR_SECRET_BUSY'),
      )
    } finally {
      await release()
    }
  })
})
