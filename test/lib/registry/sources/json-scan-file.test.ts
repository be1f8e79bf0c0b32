import {test} from 'node:test'
import assert from 'node:assert/strict'
import {closeSync, mkdtempSync, openSync, rmSync, utimesSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {scanJson, scanJsonFile} from '../../../../src/lib/registry/sources/json-scan.ts'
import {
  streamRegistryDocument,
  streamRegistryFile,
} from '../../../../src/lib/registry/sources/document.ts'
import {FilePathLoader} from '../../../../src/lib/registry/sources/file-source.ts'
import {isToolgateError} from '../../../../src/lib/errors.ts'

/**
 * The windowed file scanner must agree with the in-memory scanner on every document, whatever the
 * window size: same element ranges, same errors at the same offsets. Tiny windows force keys,
 * escapes, literals and multi-byte characters to straddle window boundaries.
 */
const dir = mkdtempSync(join(tmpdir(), 'toolgate-scanfile-'))
test.after(() => rmSync(dir, {recursive: true, force: true}))

const longKey = 'k'.repeat(300)
const docs = [
  '[]',
  ' [ 1 , -2.5e+3 , 0 , "a\\"b\\\\" , true , false , null , {} , [] ] ',
  '\ufeff{"meta":{"data":{"servers":[9]}},"data":{"x":[0],"servers":[ {"name":"é/a"} ,[2], "s" ]}}',
  `{"${longKey}":1,"data":{"${longKey}":{"servers":[1]},"servers":[{"a":"\\u00e9 ✓ 😀"},{"b":null}]}}`,
  JSON.stringify({
    data: {
      servers: Array.from({length: 50}, (_, i) => ({name: `io.x/s${i}`, d: 'é'.repeat(i)})),
    },
  }),
  '{"data":{"servers":{}}}',
  '{"servers":[1]}',
  '[1,]',
  '["\\u12G4"]',
  '[tru]',
  '[1] [2]',
  '',
  '{"data":{"servers":[1,2',
  '"just a string"',
]

function scanFile(text: string, window: number) {
  const file = join(dir, 'doc.json')
  writeFileSync(file, text)
  const fd = openSync(file, 'r')
  try {
    return scanJsonFile(fd, Buffer.byteLength(text), ['data', 'servers'], window)
  } finally {
    closeSync(fd)
  }
}

const outcome = (fn: () => unknown) => {
  try {
    return {ok: fn()}
  } catch (err) {
    return {error: (err as Error).message}
  }
}

for (const [i, text] of docs.entries()) {
  test(`scanJsonFile agrees with scanJson at every window size (document ${i})`, () => {
    const expected = outcome(() => scanJson(text, ['data', 'servers']))
    for (const window of [1, 2, 7, 64, 1000, 1 << 20]) {
      assert.deepEqual(
        outcome(() => scanFile(text, window)),
        expected,
        `window ${window}`,
      )
    }
  })
}

test('a control document is really exercised: ranges found and an error reported', () => {
  assert.equal(scanFile(docs[4] as string, 7).elements?.length, 50)
  assert.match(outcome(() => scanFile('[1,]', 1)).error ?? '', /at offset 3/)
})

test('streamRegistryFile yields the same records as the in-memory document', () => {
  const text = docs[4] as string
  const file = join(dir, 'registry.json')
  writeFileSync(file, text)
  for (const window of [5, 100, 1 << 20]) {
    const fromFile = streamRegistryFile(file, window)
    const fromText = streamRegistryDocument(text, file)
    assert.equal(fromFile.size, 50)
    assert.deepEqual([...fromFile], [...fromText])
    assert.deepEqual(fromFile.invalid, fromText.invalid)
  }
})

test('a file that is not JSON fails naming the file, as before', () => {
  const file = join(dir, 'bad.json')
  writeFileSync(file, '{"data": {"servers": [1, }')
  assert.throws(
    () => streamRegistryFile(file, 4),
    (e) => isToolgateError(e, 'ERR_SOURCE_LOAD') && e.message.startsWith(`${file}: not valid JSON`),
  )
})

test('a file rewritten between validation and reading fails the load instead of mixing data', () => {
  const file = join(dir, 'changing.json')
  writeFileSync(file, docs[4] as string)
  const stream = streamRegistryFile(file)
  writeFileSync(file, (docs[4] as string).replace('io.x/s1"', 'io.x/zz"'))
  utimesSync(file, new Date(), new Date(Date.now() + 5000))
  assert.throws(
    () => [...stream],
    (e) => isToolgateError(e, 'ERR_SOURCE_LOAD') && /changed while being loaded/.test(e.message),
  )
})

test('a directory or a missing path is "cannot read" with its code', async () => {
  await assert.rejects(
    new FilePathLoader(dir).load(),
    (e) => isToolgateError(e, 'ERR_SOURCE_LOAD') && e.message === `${dir}: cannot read (EISDIR)`,
  )
  const missing = join(dir, 'missing.json')
  await assert.rejects(
    new FilePathLoader(missing).load(),
    (e) =>
      isToolgateError(e, 'ERR_SOURCE_LOAD') && e.message === `${missing}: cannot read (ENOENT)`,
  )
})
