import assert from 'node:assert/strict'
import {execFileSync} from 'node:child_process'
import {mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, test} from 'node:test'
import {ToolgateError} from '../../../src/lib/errors.ts'
import {readSecretFile, rotatingSecretFile} from '../../../src/lib/fs/secret-file.ts'

const dir = mkdtempSync(join(tmpdir(), 'toolgate-secret-file-'))
after(() => rmSync(dir, {recursive: true, force: true}))

function file(name: string, content: string | Buffer, mode = 0o600): string {
  const p = join(dir, name)
  writeFileSync(p, content, {mode})
  return p
}

const WHAT = '--client-secret-file'
const SECRET = 'hunter2-very-secret'

test('returns the content trimmed of surrounding whitespace and newlines', () => {
  assert.equal(readSecretFile(file('nl', `  ${SECRET}\r\n\n`), {what: WHAT}), SECRET)
})

test('reads a group/world-readable file (Kubernetes mounts secrets 0644)', () => {
  assert.equal(readSecretFile(file('wide', SECRET, 0o644), {what: WHAT}), SECRET)
})

const FAILURES: Array<[string, () => string, string, RegExp]> = [
  ['an empty file', () => file('empty', ''), 'ERR_CONFIG_INVALID', /is empty$/],
  ['a whitespace-only file', () => file('blank', ' \n\t\n'), 'ERR_CONFIG_INVALID', /is empty$/],
  [
    'a missing file',
    () => join(dir, 'missing'),
    'ERR_FILE_UNREADABLE',
    /cannot read .*missing \(no such file\)$/,
  ],
  [
    'a directory',
    () => (mkdirSync(join(dir, 'd'), {recursive: true}), join(dir, 'd')),
    'ERR_CONFIG_INVALID',
    /is not a regular file$/,
  ],
  [
    'a FIFO (would block startup)',
    () => (execFileSync('mkfifo', [join(dir, 'fifo')]), join(dir, 'fifo')),
    'ERR_CONFIG_INVALID',
    /is not a regular file$/,
  ],
  [
    'a file over 64 KiB',
    () => file('big', Buffer.alloc(64 * 1024 + 1, 'a')),
    'ERR_CONFIG_INVALID',
    /larger than 64 KiB$/,
  ],
  [
    'a path under a regular file',
    () => join(file('parent', SECRET), 'child'),
    'ERR_FILE_UNREADABLE',
    /a parent is not a directory/,
  ],
]
if (process.getuid?.() !== 0) {
  // root reads any file, so the permission case only means something for other users
  FAILURES.push([
    'an unreadable file',
    () => file('locked', SECRET, 0o000),
    'ERR_FILE_UNREADABLE',
    /\(permission denied\)$/,
  ])
}

for (const [name, make, code, message] of FAILURES) {
  test(`refuses ${name} with ${code}, naming what it is for and the path`, () => {
    const path = make()
    assert.throws(
      () => readSecretFile(path, {what: WHAT}),
      (err: unknown) => {
        assert.ok(err instanceof ToolgateError)
        assert.equal(err.code, code)
        assert.ok(err.message.startsWith(`${WHAT}: `), err.message)
        assert.ok(err.message.includes(path), err.message)
        assert.match(err.message, message)
        return true
      },
    )
  })
}

test('an error never carries the file content', () => {
  const p = file('big-secret', `${SECRET}\n`.repeat(5000))
  const err = (() => {
    try {
      readSecretFile(p, {what: WHAT})
    } catch (e) {
      return e as ToolgateError
    }
    return undefined
  })()
  assert.ok(err)
  assert.doesNotMatch(`${err.message} ${JSON.stringify(err.details)}`, /hunter2/)
})

test('a rotating secret re-reads the file when it changes and keeps the last good value when it turns empty', () => {
  const p = file('rotating', 'one')
  const s = rotatingSecretFile(p, {what: 'authTokenFile'})
  assert.equal(s.get(), 'one')
  writeFileSync(p, 'two-longer\n')
  utimesSync(p, new Date(), new Date(Date.now() + 5_000))
  assert.equal(s.get(), 'two-longer')
  writeFileSync(p, '')
  assert.equal(s.get(), 'two-longer')
  rmSync(p)
  assert.equal(s.get(), 'two-longer')
})
