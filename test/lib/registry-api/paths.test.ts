import {test} from 'node:test'
import assert from 'node:assert/strict'
import {isToolgateError, type ToolgateError} from '../../../src/lib/errors.ts'
import {matchRegistryPath} from '../../../src/lib/registry-api/paths.ts'

const BASE = '/registry/default/v0.1/servers'

test('matches the three routes and URL-decodes the server name and version', () => {
  assert.deepEqual(matchRegistryPath(BASE), {kind: 'list_servers', registry: 'default'})
  assert.deepEqual(matchRegistryPath(`${BASE}/io.example%2Fweather/versions`), {
    kind: 'list_versions',
    registry: 'default',
    serverName: 'io.example/weather',
  })
  assert.deepEqual(matchRegistryPath(`${BASE}/io.example%2fweather/versions/1.0.0%2Bbuild`), {
    kind: 'get_version',
    registry: 'default',
    serverName: 'io.example/weather',
    version: '1.0.0+build',
  })
  assert.deepEqual(matchRegistryPath(`${BASE}/io.example/weather/versions/latest`), {
    kind: 'get_version',
    registry: 'default',
    serverName: 'io.example/weather',
    version: 'latest',
  })
})

test('paths that are not registry routes do not match', () => {
  for (const p of [
    '/',
    '/registry',
    '/registry/default',
    '/registry/default/v0.1',
    '/registry/default/v0/servers',
    `${BASE}/`,
    `${BASE}x`,
    `${BASE}/io.example%2Fweather`,
    `${BASE}/io.example%2Fweather/versions/`,
  ]) {
    assert.equal(matchRegistryPath(p), undefined, p)
  }
})

const BAD_NAMES: [string, string][] = [
  ['two slashes', 'a%2Fb%2Fc'],
  ['whitespace', 'io.example%2Fwea%20ther'],
  ['201 characters', 'io.example%2F' + 'w'.repeat(201 - 'io.example/'.length)],
  ['%2e%2e', '%2e%2e'],
  ['%2e%2e with a slash', '%2e%2e%2F%2e%2e'],
  ['malformed escape', 'io.example%2Fwea%zzther'],
  ['no slash', 'weather'],
]

for (const [why, raw] of BAD_NAMES) {
  test(`a server name with ${why} is a 400 naming serverName`, () => {
    for (const path of [`${BASE}/${raw}/versions`, `${BASE}/${raw}/versions/1.0.0`]) {
      assert.throws(
        () => matchRegistryPath(path),
        (e: ToolgateError) =>
          isToolgateError(e, 'ERR_BAD_PARAMETER') && e.message.startsWith('serverName: '),
        path,
      )
    }
  })
}

test('a 200-character server name is accepted', () => {
  const name = 'io.example/' + 'w'.repeat(200 - 'io.example/'.length)
  assert.equal(name.length, 200)
  assert.equal(
    (matchRegistryPath(`${BASE}/${encodeURIComponent(name)}/versions`) as {serverName: string})
      .serverName,
    name,
  )
})

test('a version with whitespace is a 400 naming version', () => {
  assert.throws(
    () => matchRegistryPath(`${BASE}/io.example%2Fweather/versions/1.0%200`),
    (e: ToolgateError) =>
      isToolgateError(e, 'ERR_BAD_PARAMETER') && e.message.startsWith('version: '),
  )
})
