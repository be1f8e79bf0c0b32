import {test} from 'node:test'
import assert from 'node:assert/strict'
import {isToolgateError, type ToolgateError} from '../../../src/lib/errors.ts'
import {parseListQuery} from '../../../src/lib/registry-api/query.ts'

test('an empty query gives the default limit of 30 and nothing else', () => {
  assert.deepEqual(parseListQuery(''), {limit: 30})
})

test('valid parameters are parsed', () => {
  const q = parseListQuery(
    'limit=100&cursor=abc_-&search=Weather%20app&updated_since=2025-01-31T12:00:00.5%2B02:00&version=latest&unknown=1',
  )
  assert.equal(q.limit, 100)
  assert.equal(q.cursor, 'abc_-')
  assert.equal(q.search, 'Weather app')
  assert.equal(q.updatedSince?.toISOString(), '2025-01-31T10:00:00.500Z')
  assert.equal(q.version, 'latest')
})

const BAD: [string, string][] = [
  ['limit=0', 'limit'],
  ['limit=-1', 'limit'],
  ['limit=abc', 'limit'],
  ['limit=101', 'limit'],
  ['limit=1.5', 'limit'],
  ['limit=1e1', 'limit'],
  ['limit=', 'limit'],
  ['limit=%205', 'limit'],
  ['limit=10&limit=20', 'limit'],
  ['cursor=', 'cursor'],
  ['cursor=' + 'a'.repeat(1025), 'cursor'],
  ['updated_since=yesterday', 'updated_since'],
  ['updated_since=2025-01-31', 'updated_since'],
  ['updated_since=2025-02-30T00:00:00Z', 'updated_since'],
  ['updated_since=2025-01-31T25:00:00Z', 'updated_since'],
  ['updated_since=2025-01-31T12:00:00', 'updated_since'],
  ['version=', 'version'],
  ['version=1.0%0A', 'version'],
  ['search=' + 'x'.repeat(201), 'search'],
]

for (const [qs, param] of BAD) {
  test(`rejects ${qs.slice(0, 40)} with a 400 naming ${param}`, () => {
    assert.throws(
      () => parseListQuery(qs),
      (e: ToolgateError) =>
        isToolgateError(e, 'ERR_BAD_PARAMETER') &&
        e.status === 400 &&
        e.message.startsWith(`${param}: `),
    )
  })
}
