import {test} from 'node:test'
import assert from 'node:assert/strict'
import {parseRegistryDocument} from '../../../../src/lib/registry/sources/document.ts'
import {isToolgateError} from '../../../../src/lib/errors.ts'

const a = {name: 'io.x/a', version: '1.0.0', description: 'A'}
const b = {name: 'io.x/b', version: '2.0.0'}

test('reads the upstream wrapper {version, meta, data.servers}', () => {
  const doc = {version: '1', meta: {last_updated: '2025-01-01T00:00:00Z'}, data: {servers: [a, b]}}
  const got = parseRegistryDocument(JSON.stringify(doc), 'f.json')
  assert.deepEqual(got.servers, [a, b])
  assert.deepEqual(got.invalid, [])
})

test('reads a plain array of server.json (with a UTF-8 BOM)', () => {
  const got = parseRegistryDocument('\ufeff' + JSON.stringify([a, b]), 'f.json')
  assert.deepEqual(got.servers, [a, b])
})

test('unwraps list entries shaped {server, _meta}', () => {
  const got = parseRegistryDocument(JSON.stringify([{server: a, _meta: {}}, b]), 'f.json')
  assert.deepEqual(got.servers, [a, b])
})

test('skips invalid records, naming each index and field', () => {
  const list = [
    a,
    {name: 'bad', version: '1'},
    {name: 'io.x/c'},
    'text',
    {server: {name: 'io.x/d', version: ''}},
    b,
  ]
  const got = parseRegistryDocument(JSON.stringify(list), 'f.json')
  assert.deepEqual(got.servers, [a, b])
  assert.deepEqual(
    got.invalid.map((i) => [i.index, i.field]),
    [
      [1, 'name'],
      [2, 'version'],
      [3, '(record)'],
      [4, 'server.version'],
    ],
  )
  assert.ok(got.invalid.every((i) => i.reason.length > 0))
})

const broken: Array<[string, string]> = [
  ['not JSON', '{"data": '],
  ['a JSON string', '"servers"'],
  ['an object without data.servers', '{"servers": []}'],
  ['data.servers that is not an array', '{"data": {"servers": {}}}'],
  ['null', 'null'],
]
for (const [label, text] of broken) {
  test(`fails the whole load for ${label}, naming the file`, () => {
    assert.throws(
      () => parseRegistryDocument(text, '/srv/registry/servers.json'),
      (err) =>
        isToolgateError(err, 'ERR_SOURCE_LOAD') &&
        err.message.includes('/srv/registry/servers.json'),
    )
  })
}
