import {test, describe} from 'node:test'
import assert from 'node:assert/strict'
import {
  isUnavailable,
  readDeadlineMs,
  reconnectDelaySeconds,
  storageError,
} from '../../../src/lib/registry/postgres/connect.ts'

describe('PostgreSQL connection settings', () => {
  test('reconnection delays: 25–50 ms after the first failure, doubling, never over 1 s (the driver allows 20 s)', () => {
    // The driver counts the failure before it asks, so the first call is with 1.
    for (let failures = 1; failures < 40; failures++) {
      for (let k = 0; k < 50; k++) {
        const d = reconnectDelaySeconds(failures)
        const full = Math.min(0.025 * 2 ** failures, 1)
        assert.ok(d >= full / 2 && d <= full, `${failures} failures: ${d} s`)
      }
    }
    const first = reconnectDelaySeconds(1)
    assert.ok(first >= 0.025 && first <= 0.05, `first: ${first} s`)
    assert.ok(reconnectDelaySeconds(100) <= 1)
  })

  test('a read waits at most connectTimeout + statementTimeout + 1 s', () => {
    assert.equal(readDeadlineMs({}), 5000 + 30_000 + 1000)
    assert.equal(readDeadlineMs({connectTimeoutMs: 1000, statementTimeoutMs: 2000}), 4000)
  })

  test('unavailable: socket codes, connection SQLSTATEs, every member of an AggregateError', () => {
    for (const code of ['ECONNREFUSED', 'CONNECT_TIMEOUT', '08006', '57P01', '57014', '53300'])
      assert.equal(isUnavailable({code}), true, code)
    for (const code of ['42P01', '23505', 'EACCES', undefined])
      assert.equal(isUnavailable({code}), false, String(code))
    const refused = {code: 'ECONNREFUSED'}
    assert.equal(isUnavailable({errors: [refused, refused]}), true)
    assert.equal(isUnavailable({errors: [refused, {code: '28P01'}]}), false)
    assert.equal(isUnavailable({errors: []}), false)
  })

  test('error messages name the code, never a connection string or a server text without one', () => {
    const url = 'postgres://app:s3cret@db.internal/registry'
    const down = storageError(
      Object.assign(new Error(`connect to ${url}`), {code: 'ECONNREFUSED'}),
      'x',
    )
    assert.equal(down.code, 'ERR_STORAGE_UNAVAILABLE')
    assert.equal(down.message, 'storage: the database is unavailable (ECONNREFUSED)')
    const other = storageError(new Error(`bad ${url}`), 'reading the registry')
    assert.equal(other.code, 'ERR_STORAGE')
    assert.equal(other.message, 'storage: reading the registry failed')
    const pg = storageError(
      Object.assign(new Error('relation "x" does not exist'), {code: '42P01'}),
      'reading',
    )
    assert.equal(pg.message, 'storage: reading failed (42P01): relation "x" does not exist')
  })
})
