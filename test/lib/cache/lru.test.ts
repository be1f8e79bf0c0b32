import assert from 'node:assert/strict'
import {test} from 'node:test'
import {LruCache} from '../../../src/lib/cache/lru.ts'

test('evicts the least recently used entry when full, counting a get as a use', () => {
  const c = new LruCache<string, number>({maxEntries: 2})
  c.set('a', 1)
  c.set('b', 2)
  assert.equal(c.get('a'), 1)
  c.set('c', 3)
  assert.equal(c.get('b'), undefined)
  assert.equal(c.get('a'), 1)
  assert.equal(c.get('c'), 3)
  assert.equal(c.size, 2)
})

test('setting an existing key replaces it and marks it most recently used', () => {
  const c = new LruCache<string, number>({maxEntries: 2})
  c.set('a', 1)
  c.set('b', 2)
  c.set('a', 10)
  c.set('c', 3)
  assert.equal(c.get('a'), 10)
  assert.equal(c.get('b'), undefined)
})

test('an entry is gone once its expiry time is reached', () => {
  let now = 1_000
  const c = new LruCache<string, string>({maxEntries: 10, now: () => now})
  c.set('k', 'v', 2_000)
  assert.equal(c.get('k'), 'v')
  now = 1_999
  assert.equal(c.get('k'), 'v')
  now = 2_000
  assert.equal(c.get('k'), undefined)
  assert.equal(c.size, 0)
})

test('an entry that is already expired is not stored and removes an older value', () => {
  const c = new LruCache<string, string>({maxEntries: 10, now: () => 5_000})
  c.set('k', 'old')
  c.set('k', 'new', 5_000)
  assert.equal(c.get('k'), undefined)
  assert.equal(c.size, 0)
})

test('without an expiry an entry lives until evicted', () => {
  let now = 0
  const c = new LruCache<string, number>({maxEntries: 1, now: () => now})
  c.set('k', 1)
  now = Number.MAX_SAFE_INTEGER
  assert.equal(c.get('k'), 1)
})

test('a size of 0 disables the cache', () => {
  const c = new LruCache<string, number>({maxEntries: 0})
  c.set('a', 1)
  assert.equal(c.get('a'), undefined)
  assert.equal(c.size, 0)
})

test('keeps falsy values (0, empty string, false) as hits', () => {
  const c = new LruCache<string, unknown>({maxEntries: 5})
  for (const v of [0, '', false]) {
    c.set(String(v), v)
    assert.equal(c.get(String(v)), v)
  }
})

for (const bad of [-1, 1.5, Number.NaN, Infinity]) {
  test(`refuses a maximum of ${bad}`, () => {
    assert.throws(() => new LruCache({maxEntries: bad}), RangeError)
  })
}

test('delete and clear remove entries', () => {
  const c = new LruCache<string, number>({maxEntries: 5})
  c.set('a', 1)
  c.set('b', 2)
  assert.equal(c.delete('a'), true)
  assert.equal(c.get('a'), undefined)
  c.clear()
  assert.equal(c.size, 0)
})
