import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

/**
 * Tests never skip silently (issue 18): `npm test` lists every skipped test by name before the
 * runner's summary lines (which stay last), and under CI a missing component fails instead.
 */
const root = join(import.meta.dirname, '..', '..')
const dir = mkdtempSync(join(tmpdir(), 'toolgate-skips-'))
process.on('exit', () => rmSync(dir, {recursive: true, force: true}))

const fixture = join(dir, 'fixture.test.ts')
writeFileSync(
  fixture,
  `import {describe, test} from 'node:test'
import {needs} from ${JSON.stringify(join(root, 'test', 'helpers', 'component.ts'))}
test('runs', () => {})
test('needs a browser', {skip: needs('Chromium', 'no Chromium at /nowhere')}, () => {
  throw new Error('no browser here')
})
describe('keyring suite', {skip: 'dbus-run-session not installed'}, () => {
  test('inner', () => {})
})
`,
)

function runTests(env: NodeJS.ProcessEnv) {
  const r = spawnSync(
    process.execPath,
    ['--test', `--test-reporter=${join(root, 'test', 'helpers', 'skip-reporter.ts')}`, fixture],
    {encoding: 'utf8', timeout: 60_000, env: {PATH: process.env.PATH, ...env}},
  )
  return {code: r.status, out: r.stdout}
}

describe('skipped tests are listed, and CI does not skip', () => {
  it('locally: every skipped test is named before the summary lines, which stay last', () => {
    const r = runTests({})
    assert.equal(r.code, 0, r.out)
    const lines = r.out.trimEnd().split('\n')
    const header = lines.findIndex((l) => /skipped tests \(2\):/.test(l))
    assert.ok(header >= 0, r.out)
    assert.match(lines[header + 1]!, /- needs a browser .*# no Chromium at \/nowhere/)
    assert.match(lines[header + 2]!, /- keyring suite .*# dbus-run-session not installed/)
    const summary = lines.findIndex((l) => /^ℹ tests \d+$/.test(l))
    assert.ok(summary > header, 'the list comes before the summary')
    assert.match(lines.at(-1)!, /^ℹ duration_ms /, 'the summary is the last thing printed')
    assert.ok(lines.includes('ℹ skipped 1'), r.out) // the runner counts a skipped suite as a suite
  })

  it('under CI: a missing component fails, named, and its tests run instead of skipping', () => {
    const r = runTests({CI: 'true'})
    assert.equal(r.code, 1, r.out)
    assert.match(r.out, /component installed: Chromium/)
    assert.match(r.out, /Chromium is required under CI \(\.ci\/run installs it\)/)
    assert.match(r.out, /no browser here/, 'the dependent test ran')
    assert.ok(r.out.includes('ℹ fail 2'), r.out)
  })
})
