import {test} from 'node:test'
import assert from 'node:assert/strict'
import {ERROR_CODES, ToolgateError, toToolgateError} from '../../src/lib/errors.ts'

test('every error code maps to an HTTP status and one of the documented exit codes', () => {
  // docs/exit-codes.md: 1 refused, 2 usage/missing input, 69 unavailable, 70 internal,
  // 77 permission, 78 configuration (0 is success and never an error's).
  for (const [code, {status, exit}] of Object.entries(ERROR_CODES)) {
    assert.ok(status >= 400 && status < 600, `${code} status ${status}`)
    assert.ok([1, 2, 69, 70, 77, 78].includes(exit), `${code} exit ${exit}`)
  }
})

test('unknown faults become ERR_INTERNAL without leaking the original message', () => {
  const e = toToolgateError(new Error('secret detail'))
  assert.equal(e.code, 'ERR_INTERNAL')
  assert.equal(e.status, 500)
  assert.ok(!e.message.includes('secret detail'))
})

test('a ToolgateError keeps its code, status and exit code', () => {
  const e = new ToolgateError('ERR_BAD_PARAMETER', 'limit: must be 1..100')
  assert.equal(toToolgateError(e), e)
  assert.equal(e.status, 400)
  assert.equal(e.exitCode, 2)
})
