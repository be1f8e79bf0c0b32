import {test} from 'node:test'
import assert from 'node:assert/strict'
import {compileNameFilter} from '../../../../src/lib/registry/sources/name-filter.ts'

const cases: Array<
  [string, {include?: string[]; exclude?: string[]} | undefined, string, boolean]
> = [
  ['no filter passes everything', undefined, 'io.x/a', true],
  ['empty lists pass everything', {include: [], exclude: []}, 'io.x/a', true],
  ['include prefix glob matches', {include: ['io.github.*']}, 'io.github.user/tool', true],
  ['include prefix glob misses', {include: ['io.github.*']}, 'com.example/tool', false],
  [
    'dot is literal, not a regex wildcard',
    {include: ['io.github.*']},
    'ioXgithub.user/tool',
    false,
  ],
  ['star crosses the slash', {include: ['*weather*']}, 'io.x/weather-now', true],
  ['exact glob', {include: ['io.x/a']}, 'io.x/ab', false],
  ['exclude wins over include', {include: ['io.*'], exclude: ['io.x/*']}, 'io.x/a', false],
  ['exclude alone removes matches', {exclude: ['*/internal-*']}, 'io.x/internal-tool', false],
  ['exclude alone keeps others', {exclude: ['*/internal-*']}, 'io.x/tool', true],
  ['any of several includes', {include: ['a.*', 'io.x/*']}, 'io.x/tool', true],
]

for (const [label, filter, name, expected] of cases) {
  test(`name filter: ${label}`, () => {
    assert.equal(compileNameFilter(filter)(name), expected)
  })
}
