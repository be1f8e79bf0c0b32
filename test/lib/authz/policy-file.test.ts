import assert from 'node:assert/strict'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {isToolgateError} from '../../../src/lib/errors.ts'
import {
  loadAuthzConfigFile,
  parseAuthzConfigText,
  validateAuthzConfig,
} from '../../../src/lib/authz/policy-file.ts'

const POLICY = 'permit(principal, action == Action::"call_tool", resource == Tool::"echo");'
const good = () => ({
  version: '1.0',
  type: 'cedarv1',
  cedar: {policies: [POLICY], entities_json: '[]', group_claim_name: '', role_claim_name: ''},
})

describe('authorization policy file', () => {
  let dir: string
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolgate-authz-'))
  })
  after(async () => {
    await rm(dir, {recursive: true, force: true})
  })

  it('loads a JSON file and names policies policy0, policy1, …', async () => {
    const path = join(dir, 'authz.json')
    const value = good()
    value.cedar.policies.push('forbid(principal, action, resource == Tool::"rm");')
    await writeFile(path, JSON.stringify(value))
    const config = await loadAuthzConfigFile(path)
    assert.deepEqual(Object.keys(config.policies), ['policy0', 'policy1'])
    assert.equal(config.type, 'cedarv1')
  })

  it('loads a YAML file with claim names and entities', async () => {
    const path = join(dir, 'authz.yaml')
    await writeFile(
      path,
      [
        'version: "1.0"',
        'type: cedarv1',
        'cedar:',
        '  policies:',
        `    - '${POLICY}'`,
        '  entities_json: \'[{"uid": "Tool::\\"echo\\"", "attrs": {"owner": "alice"}, "parents": []}]\'',
        '  group_claim_name: realm_access.roles',
        '  role_claim_name: app_roles',
      ].join('\n'),
    )
    const config = await loadAuthzConfigFile(path)
    assert.equal(config.groupClaimName, 'realm_access.roles')
    assert.equal(config.roleClaimName, 'app_roles')
    assert.deepEqual(config.entities, [
      {uid: {type: 'Tool', id: 'echo'}, attrs: {owner: 'alice'}, parents: []},
    ])
  })

  it('treats a missing entities_json and claim names as empty', () => {
    const config = validateAuthzConfig({
      version: '1.0',
      type: 'cedarv1',
      cedar: {policies: [POLICY]},
    })
    assert.deepEqual(config.entities, [])
    assert.equal(config.groupClaimName, '')
  })

  const bad: [string, (v: ReturnType<typeof good>) => unknown, RegExp][] = [
    ['an unknown type', (v) => ({...v, type: 'opav1'}), /^type: unknown policy type "opav1"/],
    ['a missing type', ({type: _t, ...v}) => v, /^type: is required/],
    ['a missing version', ({version: _v, ...v}) => v, /^version: is required/],
    [
      'an unsupported version',
      (v) => ({...v, version: '9.9'}),
      /^version: unsupported version "9.9"/,
    ],
    ['an unknown top-level field', (v) => ({...v, extra: 1}), /^extra: unknown field/],
    [
      'an unknown cedar field',
      (v) => ({...v, cedar: {...v.cedar, schema: ''}}),
      /^cedar\.schema: unknown field/,
    ],
    ['a missing cedar section', ({cedar: _c, ...v}) => v, /^cedar: is required/],
    [
      'no policies',
      (v) => ({...v, cedar: {...v.cedar, policies: []}}),
      /^cedar\.policies: must hold at least one policy/,
    ],
    [
      'policies not an array',
      (v) => ({...v, cedar: {...v.cedar, policies: POLICY}}),
      /^cedar\.policies: is required and must be an array/,
    ],
    [
      'a non-string policy',
      (v) => ({...v, cedar: {...v.cedar, policies: [POLICY, 42]}}),
      /^cedar\.policies\[1\]: must be a non-empty policy string/,
    ],
    [
      'a policy that does not parse',
      (v) => ({
        ...v,
        cedar: {...v.cedar, policies: [POLICY, 'permit(principal, action, resource']},
      }),
      /^cedar\.policies\[1\]: policy 1 does not parse: .*unexpected end of input/,
    ],
    [
      'two statements in one policy string',
      (v) => ({...v, cedar: {...v.cedar, policies: [`${POLICY} ${POLICY}`]}}),
      /^cedar\.policies\[0\]: policy 0 does not parse: .*unexpected token/,
    ],
    [
      'entities_json that is not JSON',
      (v) => ({...v, cedar: {...v.cedar, entities_json: '[{'}}),
      /^cedar\.entities_json: is not valid JSON/,
    ],
    [
      'entities_json that is not an array',
      (v) => ({...v, cedar: {...v.cedar, entities_json: '{}'}}),
      /^cedar\.entities_json: must hold a JSON array/,
    ],
    [
      'entities_json given as an array',
      (v) => ({...v, cedar: {...v.cedar, entities_json: []}}),
      /^cedar\.entities_json: must be a string/,
    ],
    [
      'an entity with a bad uid',
      (v) => ({...v, cedar: {...v.cedar, entities_json: '[{"uid": "nope", "attrs": {}}]'}}),
      /^cedar\.entities_json\[0\]\.uid: "nope" is not an entity uid/,
    ],
    [
      'a duplicate entity',
      (v) => ({
        ...v,
        cedar: {
          ...v.cedar,
          entities_json: '[{"uid": "Tool::\\"a\\""}, {"uid": {"type": "Tool", "id": "a"}}]',
        },
      }),
      /^cedar\.entities_json\[1\]\.uid: duplicate entity Tool::"a"/,
    ],
    [
      'an entity attribute Cedar rejects',
      (v) => ({
        ...v,
        cedar: {...v.cedar, entities_json: '[{"uid": "Tool::\\"a\\"", "attrs": {"x": 1.5}}]'},
      }),
      /^cedar\.entities_json: Cedar rejected the entities/,
    ],
    [
      'a non-string group_claim_name',
      (v) => ({...v, cedar: {...v.cedar, group_claim_name: 7}}),
      /^cedar\.group_claim_name: must be a string/,
    ],
  ]
  for (const [label, mutate, message] of bad) {
    it(`refuses ${label}, naming the field`, () => {
      assert.throws(
        () => validateAuthzConfig(mutate(good())),
        (err: unknown) => isToolgateError(err, 'ERR_POLICY_INVALID') && message.test(err.message),
      )
    })
  }

  it('prefixes errors with the file name and reports unparsable YAML', () => {
    assert.throws(
      () => parseAuthzConfigText('version: "1.0"\ntype: [unclosed', 'authz.yaml'),
      (err: unknown) =>
        isToolgateError(err, 'ERR_POLICY_INVALID') &&
        err.message.startsWith('authz.yaml: cannot be parsed'),
    )
    assert.throws(
      () => parseAuthzConfigText(JSON.stringify({...good(), type: 'x'}), 'p.json'),
      (err: unknown) =>
        isToolgateError(err, 'ERR_POLICY_INVALID') &&
        err.message.startsWith('p.json: type: unknown policy type'),
    )
  })

  it('reports a missing file as not found', async () => {
    await assert.rejects(loadAuthzConfigFile(join(dir, 'absent.yaml')), (err: unknown) =>
      isToolgateError(err, 'ERR_CONFIG_NOT_FOUND'),
    )
  })
})
