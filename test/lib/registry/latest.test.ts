import {test} from 'node:test'
import assert from 'node:assert/strict'
import {compareSemver, parseSemver, pickLatest} from '../../../src/lib/registry/latest.ts'

// semver.org §11.4 example chain, each lower than the next.
const ordered = [
  '1.0.0-alpha',
  '1.0.0-alpha.1',
  '1.0.0-alpha.beta',
  '1.0.0-beta',
  '1.0.0-beta.2',
  '1.0.0-beta.11',
  '1.0.0-rc.1',
  '1.0.0',
  '1.0.1',
  '1.2.0',
  '1.10.0',
  '2.0.0',
]

test('orders versions by SemVer 2.0.0 precedence', () => {
  for (let i = 0; i < ordered.length - 1; i++) {
    const a = parseSemver(ordered[i] as string)
    const b = parseSemver(ordered[i + 1] as string)
    assert.ok(a && b, `${ordered[i]} and ${ordered[i + 1]} parse`)
    assert.equal(compareSemver(a, b), -1, `${ordered[i]} < ${ordered[i + 1]}`)
    assert.equal(compareSemver(b, a), 1, `${ordered[i + 1]} > ${ordered[i]}`)
  }
})

test('ignores build metadata for precedence', () => {
  assert.equal(compareSemver(parseSemver('1.0.0+a')!, parseSemver('1.0.0+b')!), 0)
})

for (const bad of ['1.0', 'v1.0.0', '01.0.0', '1.0.0-', 'latest', '', '1.0.0.0']) {
  test(`does not parse ${JSON.stringify(bad)} as semver`, () => {
    assert.equal(parseSemver(bad), undefined)
  })
}

test('picks the highest semver when every version is semver, whatever the publish order', () => {
  const got = pickLatest([
    {version: '1.10.0', publishedAt: '2024-01-01T00:00:00Z'},
    {version: '2.0.0-rc.1', publishedAt: '2025-01-01T00:00:00Z'},
    {version: '1.9.0', publishedAt: '2026-01-01T00:00:00Z'},
  ])
  assert.equal(got?.version, '2.0.0-rc.1')
})

test('picks the most recently published when some version is not semver', () => {
  const got = pickLatest([
    {version: '2.0.0', publishedAt: '2024-01-01T00:00:00Z'},
    {version: '2024-06', publishedAt: '2024-06-01T00:00:00Z'},
    {version: '1.0.0', publishedAt: new Date('2025-01-01T00:00:00Z')},
  ])
  assert.equal(got?.version, '1.0.0')
})

test('breaks ties by version text so the input order does not matter', () => {
  const a = {version: 'alpha', publishedAt: '2024-01-01T00:00:00Z'}
  const b = {version: 'beta', publishedAt: '2024-01-01T00:00:00Z'}
  assert.equal(pickLatest([a, b])?.version, 'beta')
  assert.equal(pickLatest([b, a])?.version, 'beta')
})

test('returns undefined for no candidates', () => {
  assert.equal(pickLatest([]), undefined)
})
