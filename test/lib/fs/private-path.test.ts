/**
 * toolgate's state and log files cannot be redirected or read by another local user (issue 30,
 * finding 6): a symlink planted at a log path is refused, a log left 0666 is made 0600, and a
 * directory others can write (or that another user owns) is refused with the fix. Also through
 * `toolgate run`, on a temporary state directory.
 */
import assert from 'node:assert/strict'
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {ensurePrivateDir, openPrivateAppend} from '../../../src/lib/fs/private-path.ts'
import {RotatingLog} from '../../../src/lib/supervisor/rotating-log.ts'
import {runCli} from '../../helpers/proxy-run.ts'
import {UNRULY} from '../../helpers/workload.ts'

const mode = (p: string) => statSync(p).mode & 0o777

describe('private state and log paths', () => {
  let dir: string
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tg-private-'))
  })
  after(() => rm(dir, {recursive: true, force: true}))

  it('refuses to write a log through a planted symlink, and the target stays untouched', () => {
    const victim = join(dir, 'victim.txt')
    writeFileSync(victim, 'precious\n')
    const logs = join(dir, 'a', 'logs')
    mkdirSync(logs, {recursive: true, mode: 0o700})
    symlinkSync(victim, join(logs, 'w.log'))
    assert.throws(
      () => new RotatingLog(join(logs, 'w.log')),
      (err: Error & {code?: string}) =>
        err.code === 'ERR_UNSAFE_PATH' &&
        /symbolic link; refusing to write through it/.test(err.message),
    )
    assert.equal(readFileSync(victim, 'utf8'), 'precious\n')
  })

  it('makes an existing 0666 log 0600 when it opens it', () => {
    const file = join(dir, 'open.log')
    writeFileSync(file, 'old\n')
    chmodSync(file, 0o666)
    const log = new RotatingLog(file)
    log.line('new')
    log.close()
    assert.equal(mode(file), 0o600)
    assert.equal(readFileSync(file, 'utf8'), 'old\nnew\n')
  })

  it('rotation never follows a symlink planted at the log path either', () => {
    const logs = join(dir, 'rot')
    mkdirSync(logs, {mode: 0o700})
    const file = join(logs, 'r.log')
    const log = new RotatingLog(file, {maxBytes: 10})
    log.line('0123456789')
    // Replace the live log with a symlink before rotation reopens it.
    const victim = join(dir, 'victim2.txt')
    writeFileSync(victim, 'keep\n')
    unlinkSync(file)
    symlinkSync(victim, file)
    // rename(file → file.1) moves the symlink itself; the new file is created fresh.
    log.line('after rotation')
    log.close()
    assert.equal(readFileSync(victim, 'utf8'), 'keep\n')
    assert.equal(mode(file), 0o600)
    assert.equal(readFileSync(file, 'utf8'), 'after rotation\n')
  })

  it('creates directories 0700 and refuses one others can write, naming the fix', () => {
    const top = join(dir, 'state', 'toolgate')
    ensurePrivateDir(join(top, 'logs'), top)
    assert.equal(mode(top), 0o700)
    assert.equal(mode(join(top, 'logs')), 0o700)
    chmodSync(top, 0o777)
    assert.throws(
      () => ensurePrivateDir(join(top, 'logs'), top),
      (err: Error & {code?: string}) =>
        err.code === 'ERR_UNSAFE_PATH' &&
        err.message === `${top} is writable by other users (mode 0777); run 'chmod 700 ${top}'`,
    )
    chmodSync(top, 0o700)
    chmodSync(join(top, 'logs'), 0o770)
    assert.throws(() => ensurePrivateDir(join(top, 'logs'), top), /mode 0770/)
  })

  it(
    'refuses a directory or a file owned by another user',
    {skip: process.getuid?.() !== 0 && !process.env.CI ? 'needs root to chown' : false},
    () => {
      const top = join(dir, 'other')
      mkdirSync(top, {mode: 0o700})
      chownSync(top, 65534, 65534)
      assert.throws(() => ensurePrivateDir(top, top), /belongs to another user \(uid 65534\)/)
      const file = join(dir, 'theirs.log')
      writeFileSync(file, '')
      chownSync(file, 65534, 65534)
      assert.throws(() => openPrivateAppend(file), /belongs to another user \(uid 65534\)/)
    },
  )
})

describe('toolgate run on an unsafe state directory', () => {
  let home: string
  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'tg-private-run-'))
  })
  after(() => rm(home, {recursive: true, force: true}))

  it('a planted symlink at the server log makes run fail with the path, writing nothing through it', async () => {
    const logs = join(home, 'state', 'toolgate', 'logs')
    mkdirSync(logs, {recursive: true, mode: 0o700})
    const victim = join(home, 'victim')
    writeFileSync(victim, 'untouched')
    symlinkSync(victim, join(logs, 'sym.log'))
    const r = runCli(['run', 'sym', '--foreground', '--', ...UNRULY], home)
    const code = await r.exited
    assert.equal(code, 77)
    assert.match(r.stderr(), /sym\.log is a symbolic link; refusing to write through it/)
    assert.equal(readFileSync(victim, 'utf8'), 'untouched')
  })

  it('a world-writable state directory is refused before anything starts', async () => {
    const top = join(home, 'state', 'toolgate')
    chmodSync(top, 0o777)
    try {
      const r = runCli(['run', 'open', '--', ...UNRULY], home)
      assert.equal(await r.exited, 77)
      assert.match(r.stderr(), /is writable by other users \(mode 0777\); run 'chmod 700 /)
      assert.equal(existsSync(join(top, 'workloads', 'open.json')), false)
    } finally {
      chmodSync(top, 0o700)
    }
  })
})
