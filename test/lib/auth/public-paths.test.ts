import {test} from 'node:test'
import assert from 'node:assert/strict'
import {isPublicPath, normalisePath} from '../../../src/lib/auth/public-paths.ts'

// Contract §1: /openapi.json and /.well-known/* always public; publicPaths add more; segment-boundary
// matching on the normalised path; encoded `/` or `.` never public.
const CASES: Array<[path: string, publicPaths: string[], expected: boolean]> = [
  ['/openapi.json', [], true],
  ['/openapi.json?x=1', [], true],
  ['/openapi.jsonx', [], false],
  ['/.well-known/oauth-protected-resource', [], true],
  ['/.well-known', [], true],
  ['/.well-knownx/a', [], false],
  ['/registry/default/v0.1/servers', [], false],
  ['/docs', ['/docs'], true],
  ['/docs/x/y', ['/docs'], true],
  ['/docs/', ['/docs/'], true],
  ['/docsx', ['/docs'], false],
  ['/doc', ['/docs'], false],
  ['//docs', ['/docs'], true],
  ['/docs/../registry/default/v0.1/servers', ['/docs'], false],
  ['/docs/..%2fregistry/default/v0.1/servers', ['/docs'], false],
  ['/docs%2fx', ['/docs'], false],
  ['/%2e%2e/openapi.json', [], false],
  ['/docs/%2E%2E/registry', ['/docs'], false],
  ['/docs\\..\\registry', ['/docs'], false], // one segment (`docs\..\registry`): backslashes are not separators here
  ['/docs/%5c..%5cregistry', ['/docs'], false],
  ['/../openapi.json', [], false],
  ['/./openapi.json', [], true],
  ['/registry/default/v0.1/servers', ['/'], false],
  ['/registry/default/v0.1/servers', ['//'], false],
  ['/Docs', ['/docs'], false],
]

for (const [path, publicPaths, expected] of CASES) {
  test(`${path} with publicPaths ${JSON.stringify(publicPaths)} is ${expected ? 'public' : 'protected'}`, () => {
    assert.equal(isPublicPath(path, publicPaths), expected)
  })
}

test('normalisePath resolves dot segments and refuses to climb above the root', () => {
  assert.equal(normalisePath('/a/./b//c/../d'), '/a/b/d')
  assert.equal(normalisePath('/a/..'), '/')
  assert.equal(normalisePath('/..'), undefined)
})
