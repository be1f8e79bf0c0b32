import {test} from 'node:test'
import assert from 'node:assert/strict'
import {scanJson} from '../../../../src/lib/registry/sources/json-scan.ts'

// The scanner must accept exactly what JSON.parse accepts: each case is checked against it.
const texts = [
  '[]',
  ' [ 1 , -2.5e+3 , 0 , "a\\"b\\\\" , true , false , null , {} , [] ] ',
  '{"data":{"servers":[{"name":"x/y","n":[1,{"a":"é ✓ 😀"}]}]}}',
  '"just a string"',
  '12',
  '[1,]',
  '[01]',
  '[1.]',
  '[-]',
  '[.5]',
  '[1e]',
  '{"a" 1}',
  '{"a":1,}',
  '{a:1}',
  '["tab\there"]',
  '["bad \\x escape"]',
  '["\\u12G4"]',
  '[tru]',
  '[1] [2]',
  '',
  '{"data":',
  '[NaN]',
  "['single']",
]

for (const text of texts) {
  let parses = true
  try {
    JSON.parse(text)
  } catch {
    parses = false
  }
  test(`${parses ? 'accepts' : 'rejects'} ${JSON.stringify(text)} like JSON.parse`, () => {
    if (parses) assert.doesNotThrow(() => scanJson(text, ['data', 'servers']))
    else assert.throws(() => scanJson(text, ['data', 'servers']))
  })
}

test('returns byte ranges of the elements at data.servers, ignoring nested look-alikes', () => {
  const doc =
    '\ufeff{"meta":{"data":{"servers":[9]}},"data":{"x":[0],"servers":[ {"name":"é/a"} ,[2], "s" ]}}'
  const bytes = Buffer.from(doc, 'utf8')
  const got = scanJson(bytes, ['data', 'servers'])
  assert.equal(got.root, 'object')
  assert.equal(got.target, 'array')
  assert.deepEqual(
    got.elements?.map(([s, e]) => bytes.toString('utf8', s, e)),
    ['{"name":"é/a"}', '[2]', '"s"'],
  )
})

test('a root array is the list; a root object without the path has no elements', () => {
  assert.deepEqual(scanJson('[1, 2]', ['data', 'servers']).elements, [
    [1, 2],
    [4, 5],
  ])
  const none = scanJson('{"servers":[1]}', ['data', 'servers'])
  assert.equal(none.elements, undefined)
  assert.equal(scanJson('{"data":{"servers":{}}}', ['data', 'servers']).target, 'other')
})
