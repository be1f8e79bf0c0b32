import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {backgroundProcessEnv} from '../../../src/lib/workloads/malloc-env.ts'

describe('backgroundProcessEnv', () => {
  it('adds one arena and an early trim on Linux, and names what it added', () => {
    const base = {PATH: '/bin'}
    const {env, added} = backgroundProcessEnv(base, 'linux')
    assert.match(
      env.GLIBC_TUNABLES ?? '',
      /^glibc\.malloc\.arena_max=1:glibc\.malloc\.trim_threshold=\d+$/,
    )
    assert.deepEqual(added, ['GLIBC_TUNABLES'])
    assert.equal(env.PATH, '/bin')
    assert.deepEqual(base, {PATH: '/bin'}, 'the caller’s environment is not changed')
  })

  it("leaves a user's own setting, and other systems, alone", () => {
    const own = {GLIBC_TUNABLES: 'glibc.malloc.perturb=0'}
    assert.deepEqual(backgroundProcessEnv(own, 'linux'), {env: own, added: []})
    for (const platform of ['darwin', 'win32'] as const) {
      assert.deepEqual(backgroundProcessEnv({}, platform), {env: {}, added: []})
    }
  })
})
