import {test} from 'node:test'
import assert from 'node:assert/strict'
import {ResponseCache} from '../../../src/lib/registry-api/response-cache.ts'

const body = (n: number, fill = 'x') => Buffer.from(fill.repeat(n))

test('a body is returned for the same key and data version only', () => {
  const cache = new ResponseCache({maxBytes: 1000})
  cache.set('k', 1, body(10))
  assert.equal(cache.get('k', 1)?.toString(), 'x'.repeat(10))
  assert.equal(cache.get('other', 1), undefined)
})

test('a new data version drops every entry, including on set', () => {
  const cache = new ResponseCache({maxBytes: 1000})
  cache.set('a', 1, body(10))
  cache.set('b', 1, body(10))
  assert.equal(cache.get('a', 2), undefined)
  assert.equal(cache.size, 0)
  assert.equal(cache.get('b', 1), undefined, 'an older version is not resurrected')
  cache.set('c', 3, body(10))
  cache.set('d', 4, body(10))
  assert.equal(cache.get('c', 4), undefined)
  assert.equal(cache.get('d', 4)?.length, 10)
})

test('the least recently used entries go first once the budget is exceeded', () => {
  const cache = new ResponseCache({maxBytes: 30, maxEntryBytes: 30})
  cache.set('a', 1, body(10))
  cache.set('b', 1, body(10))
  cache.set('c', 1, body(10))
  assert.ok(cache.get('a', 1), 'touching a makes b the oldest')
  cache.set('d', 1, body(10))
  assert.equal(cache.get('b', 1), undefined)
  assert.deepEqual(
    ['a', 'c', 'd'].map((k) => cache.get(k, 1)?.length),
    [10, 10, 10],
  )
  assert.equal(cache.bytes, 30)
})

test('replacing a key accounts its bytes once', () => {
  const cache = new ResponseCache({maxBytes: 100, maxEntryBytes: 100})
  cache.set('a', 1, body(40))
  cache.set('a', 1, body(50, 'y'))
  assert.equal(cache.bytes, 50)
  assert.equal(cache.get('a', 1)?.toString(), 'y'.repeat(50))
})

test('bodies above the per-entry bound are not kept', () => {
  const cache = new ResponseCache({maxBytes: 800})
  assert.equal(cache.maxEntryBytes, 100, 'default: an eighth of the budget')
  cache.set('big', 1, body(101))
  assert.equal(cache.get('big', 1), undefined)
  assert.equal(cache.bytes, 0)
})
