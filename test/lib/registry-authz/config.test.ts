/**
 * `auth.authz` in the serve configuration: exactly one of policyFile / cedar, every error names the
 * field, a policy that does not parse names its index and the parser's message.
 */
import {test} from 'node:test'
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {validateServeConfig} from '../../../src/lib/config/serve-config.ts'
import {isToolgateError} from '../../../src/lib/errors.ts'

const dir = mkdtempSync(join(tmpdir(), 'tg-authz-config-'))
test.after(() => rmSync(dir, {recursive: true, force: true}))

const good = {policies: ['permit(principal, action, resource);']}

function check(authz: unknown) {
  return validateServeConfig(
    {auth: {mode: 'anonymous', authz}},
    {defaultDbPath: join(dir, 'db'), baseDir: dir},
  )
}

function refuses(authz: unknown, expected: RegExp) {
  assert.throws(
    () => check(authz),
    (err: unknown) => {
      assert.ok(isToolgateError(err))
      assert.equal(err.code, 'ERR_CONFIG_INVALID')
      assert.match(err.message, expected)
      return true
    },
  )
}

test('inline cedar and a policy file are both accepted', () => {
  const inline = check({cedar: good}).authz
  assert.equal(inline?.kind, 'inline')
  writeFileSync(join(dir, 'p.json'), JSON.stringify({version: '1.0', type: 'cedarv1', cedar: good}))
  const file = check({policyFile: 'p.json'}).authz
  assert.deepEqual(file, {kind: 'file', path: join(dir, 'p.json')})
  assert.equal(check(undefined).authz, undefined)
})

test('bad auth.authz values are refused, naming the field', () => {
  refuses({}, /auth\.authz: set exactly one of "policyFile"/)
  refuses({cedar: good, policyFile: 'x'}, /auth\.authz: set exactly one of/)
  refuses({policy: 'x'}, /auth\.authz\.policy: unknown key/)
  refuses('permit', /auth\.authz: must be an object/)
  refuses(
    {policyFile: 'missing.json'},
    /auth\.authz\.policyFile: cannot read .*missing\.json \(no such file\)/,
  )
  refuses({cedar: {policies: []}}, /auth\.authz\.cedar\.policies: must hold at least one policy/)
  refuses(
    {cedar: {policies: ['permit(principal, action, resource);', 'permit(principal action);']}},
    /auth\.authz\.cedar\.policies\[1\]: policy 1 does not parse: /,
  )
  refuses({cedar: {...good, entities_json: '{'}}, /auth\.authz\.cedar\.entities_json/)
  writeFileSync(
    join(dir, 'bad.yaml'),
    'version: "2"\ntype: cedarv1\ncedar: {policies: ["permit(principal, action, resource);"]}\n',
  )
  refuses(
    {policyFile: 'bad.yaml'},
    /auth\.authz\.policyFile: .*bad\.yaml: version: unsupported version "2"/,
  )
})
