import {after, test} from 'node:test'
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {isToolgateError} from '../../../../src/lib/errors.ts'
import {INLINE_SCAN_BYTES} from '../../../../src/lib/registry/sources/document.ts'
import {FilePathLoader} from '../../../../src/lib/registry/sources/file-source.ts'

/**
 * Large registry files are scanned in a worker thread (so a sync never blocks the event loop for
 * the whole scan, test/lib/server/sync-event-loop.test.ts); its answers and errors must be the
 * same as the inline scan's.
 */
const dir = mkdtempSync(join(tmpdir(), 'toolgate-scan-worker-'))
after(() => rmSync(dir, {recursive: true, force: true}))

const record = (i: number) => ({
  name: `io.example/server-${i}`,
  version: '1.0.0',
  description: 'd'.repeat(400),
})
const many = (n: number) => Array.from({length: n}, (_, i) => record(i))

test('a large file: every record, in order, with the invalid one reported by index', async () => {
  const items: unknown[] = many(12_000)
  items[5] = {name: 'no version'}
  const file = join(dir, 'big.json')
  writeFileSync(file, JSON.stringify({data: {servers: items}}))
  const {records} = await new FilePathLoader(file).load()
  const names = [...records].map((r) => r.name)
  assert.ok(records.size * 400 > INLINE_SCAN_BYTES, 'large enough for the worker')
  assert.equal(names.length, 11_999)
  assert.equal(names[0], 'io.example/server-0')
  assert.equal(names.at(-1), 'io.example/server-11999')
  assert.deepEqual(
    (records as unknown as {invalid: Array<{index: number}>}).invalid.map((p) => p.index),
    [5],
  )
})

test('a large file that is not valid JSON: ERR_SOURCE_LOAD naming the file and the offset', async () => {
  const file = join(dir, 'broken.json')
  const text = JSON.stringify(many(12_000))
  writeFileSync(file, text.slice(0, -2) + '?]')
  await assert.rejects(new FilePathLoader(file).load(), (err) => {
    assert.ok(isToolgateError(err, 'ERR_SOURCE_LOAD'), String(err))
    assert.match(err.message, /broken\.json: not valid JSON \(.* at offset \d+\)/)
    return true
  })
})

test('a missing file: "cannot read (ENOENT)"', async () => {
  await assert.rejects(
    new FilePathLoader(join(dir, 'absent.json')).load(),
    /cannot read \(ENOENT\)/,
  )
})
