import {test} from 'node:test'
import assert from 'node:assert/strict'
import {validateServerName} from '../../../src/lib/registry/names.ts'

const valid = [
  'io.github.user/weather',
  'a/b',
  'com.example/my_server-1.2',
  'A1-b.C/x_y.z',
  'x/' + 'a'.repeat(198),
]
const invalid: Array<[string, unknown]> = [
  ['no slash', 'io.github.user'],
  ['two slashes', 'io.github/user/weather'],
  ['too short', 'a/'],
  ['201 characters', 'x/' + 'a'.repeat(199)],
  ['whitespace', 'io.example/wea ther'],
  ['leading whitespace', ' io.example/weather'],
  ['empty namespace', '/weather'],
  ['empty name', 'io.example/'],
  ['underscore in namespace', 'io_example/weather'],
  ['namespace ends with a dot', 'io.example./weather'],
  ['name starts with a dot', 'io.example/.weather'],
  ['dot-dot name', 'io.example/..'],
  ['encoded dots', '%2e%2e/x'],
  ['not a string', 42],
]

for (const name of valid) {
  test(`accepts the server name ${JSON.stringify(name.length > 40 ? name.slice(0, 20) + '…' : name)}`, () => {
    assert.equal(validateServerName(name), undefined)
  })
}

for (const [label, name] of invalid) {
  test(`rejects a server name with ${label}, giving a reason`, () => {
    const reason = validateServerName(name)
    assert.equal(typeof reason, 'string')
    assert.ok((reason as string).length > 5)
  })
}
