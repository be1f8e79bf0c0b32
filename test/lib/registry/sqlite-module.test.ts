import {test} from 'node:test'
import assert from 'node:assert/strict'
import {isSqliteExperimentalWarning, loadSqlite} from '../../../src/lib/registry/sqlite-module.ts'

const cases: Array<[string, unknown, unknown, boolean]> = [
  [
    'the SQLite experimental warning (string form)',
    'SQLite is an experimental feature and might change at any time',
    'ExperimentalWarning',
    true,
  ],
  [
    'the SQLite experimental warning (options form)',
    'SQLite is an experimental feature',
    {type: 'ExperimentalWarning'},
    true,
  ],
  [
    'the SQLite experimental warning (Error form)',
    Object.assign(new Error('SQLite is an experimental feature'), {name: 'ExperimentalWarning'}),
    undefined,
    true,
  ],
  ['another experimental warning', 'WASI is an experimental feature', 'ExperimentalWarning', false],
  ['a deprecation mentioning SQLite', 'sqlite thing is deprecated', 'DeprecationWarning', false],
  ['a plain warning', 'something happened', undefined, false],
]
for (const [label, warning, type, dropped] of cases) {
  test(`${dropped ? 'drops' : 'keeps'} ${label}`, () => {
    assert.equal(isSqliteExperimentalWarning(warning, type), dropped)
  })
}

test('loading node:sqlite restores process.emitWarning and yields DatabaseSync', async () => {
  const before = process.emitWarning
  const mod = await loadSqlite()
  assert.equal(typeof mod.DatabaseSync, 'function')
  assert.equal(process.emitWarning, before)
  assert.equal(await loadSqlite(), mod, 'loaded once')
})
