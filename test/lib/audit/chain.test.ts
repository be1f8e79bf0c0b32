/**
 * The audit file's hash chain across rotations and restarts (issue 35): records written by one
 * process, rotated into FILE.1 … FILE.n, then a second process continuing the same chain; verify
 * reads them oldest first and names the first record changed, removed or reordered in any file.
 * One writer per file.
 */
import assert from 'node:assert/strict'
import {existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {isoTime} from '../../../src/lib/audit/auditor.ts'
import {AuditFile} from '../../../src/lib/audit/file-sink.ts'
import {redact, redactionPattern} from '../../../src/lib/audit/mcp-events.ts'
import {chainFiles, verifyAuditChain} from '../../../src/lib/audit/verify.ts'
import {isToolgateError} from '../../../src/lib/errors.ts'

let dir: string
before(() => (dir = mkdtempSync(join(tmpdir(), 'toolgate-audit-chain-'))))
after(() => rmSync(dir, {recursive: true, force: true}))

describe('audit file chain', () => {
  it('runs on across rotations and a restart, and verifies', () => {
    const file = join(dir, 'a', 'audit.log')
    const first = new AuditFile(file, {maxBytes: 600, keep: 10})
    // Each record in its own event-loop turn, as requests come (writes are batched per turn).
    for (let i = 0; i < 10; i++) {
      first.write({event: 'mcp_tool_call', n: i})
      first.flush()
    }
    first.close()
    const second = new AuditFile(file, {maxBytes: 600, keep: 10})
    for (let i = 10; i < 14; i++) {
      second.write({event: 'mcp_tool_call', n: i})
      second.flush()
    }
    second.close()
    const files = chainFiles([file])
    assert.ok(files.length >= 3, `rotated: ${files.join(' ')}`)
    assert.equal(files.at(-1), file)
    assert.equal(statSync(file).mode & 0o777, 0o600)
    const result = verifyAuditChain(files)
    assert.deepEqual([result.ok, result.records, result.startsAt], [true, 14, undefined])
    // Each rotated file starts with the last hash of the one before.
    for (let k = 1; k < files.length; k++) {
      const last = readFileSync(files[k - 1]!, 'utf8')
        .trim()
        .split('\n')
        .at(-1)!
      const next = readFileSync(files[k]!, 'utf8').split('\n')[0]!
      assert.equal(JSON.parse(next).prev, JSON.parse(last).hash)
    }
  })

  it('names tampering in a rotated file, and a deleted rotation at the start is not tampering', () => {
    const file = join(dir, 'a', 'audit.log')
    const files = chainFiles([file])
    const middle = files[1]!
    const original = readFileSync(middle, 'utf8')
    writeFileSync(middle, original.replace('"n":', '"n": '))
    const bad = verifyAuditChain(files)
    assert.equal(bad.ok, false)
    assert.deepEqual([bad.problem!.file, bad.problem!.line], [middle, 1])
    writeFileSync(middle, original)
    // The oldest rotation removed on purpose (log retention): the chain starts later, and says so.
    const kept = verifyAuditChain(files.slice(1))
    assert.equal(kept.ok, true)
    assert.ok(kept.startsAt! > 1)
  })

  it('one writer per file: a second live process is refused; a dead one’s lock is taken over', () => {
    const file = join(dir, 'b', 'audit.log')
    const a = new AuditFile(file)
    assert.throws(
      () => {
        // A lock held by a live process other than this one.
        writeFileSync(`${file}.lock`, String(process.ppid))
        new AuditFile(file)
      },
      (err: Error) =>
        isToolgateError(err, 'ERR_CONFLICT') &&
        /another toolgate \(pid \d+\) writes this audit log/.test(err.message),
    )
    a.close()
    writeFileSync(`${file}.lock`, '999999')
    const b = new AuditFile(file)
    b.write({event: 'x'})
    b.close()
    assert.ok(!existsSync(`${file}.lock`))
  })

  it('refuses to continue a chain whose last record is damaged', () => {
    const file = join(dir, 'c', 'audit.log')
    const a = new AuditFile(file)
    a.write({event: 'x'})
    a.close()
    writeFileSync(file, readFileSync(file, 'utf8').replace('"x"', '"y"'))
    assert.throws(
      () => new AuditFile(file),
      /its last record is damaged; run 'toolgate audit verify/,
    )
  })
})

describe('argument redaction', () => {
  it('replaces the values of secret-looking keys and of named ones, at any depth', () => {
    const pattern = redactionPattern(['ssn'])
    assert.deepEqual(
      redact(
        {
          query: 'x',
          password: 'p',
          API_KEY: 'k',
          nested: [{Authorization: 'Bearer t', ssn: '1', ok: 2}],
          sessionId: 's',
        },
        pattern,
      ),
      {
        query: 'x',
        password: '[redacted]',
        API_KEY: '[redacted]',
        nested: [{Authorization: '[redacted]', ssn: '[redacted]', ok: 2}],
        sessionId: '[redacted]',
      },
    )
  })
})

describe('record times', () => {
  it('are what Date#toISOString gives, to the millisecond, across seconds, years and the epoch', () => {
    const samples = [0, 1, 999, 1000, 1001, Date.now(), 253402300799999, 253402300800000, -1]
    for (let i = 0; i < 2000; i++) samples.push(Math.floor(Math.random() * 4e12))
    for (const ms of samples) assert.equal(isoTime(ms), new Date(ms).toISOString(), String(ms))
  })
})

describe('a sink that cannot go on as planned', () => {
  it('a rotation that fails is reported, loses nothing and does not throw', () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolgate-audit-rotate-'))
    const log = join(dir, 'audit.log')
    const sink = new AuditFile(log, {maxBytes: 200})
    const problems: string[] = []
    sink.onRotateError = (err) => problems.push(err.message)
    sink.onError = (err) => problems.push(`dropped: ${err.message}`)
    try {
      // The directory is removed under it: the rotation's rename fails (as root too).
      rmSync(dir, {recursive: true, force: true})
      for (let i = 0; i < 5; i++) sink.write({event: 'mcp_tool_call', n: i})
      assert.doesNotThrow(() => sink.flush())
      assert.equal(problems.length, 1, problems.join('; '))
      assert.match(problems[0]!, /ENOENT/)
      assert.doesNotThrow(() => sink.close())
      assert.throws(() => sink.write({event: 'late'}), /is closed/)
    } finally {
      rmSync(dir, {recursive: true, force: true})
    }
  })
})
