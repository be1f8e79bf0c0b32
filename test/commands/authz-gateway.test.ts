/**
 * `authz check` and `authz lint` read a gateway's backends (issue 37) the way the gateway's front
 * does: `resource.backend` is set from the prefix of the name, so a policy is judged and linted
 * against the gateway it will guard.
 */
import assert from 'node:assert/strict'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {runCli} from '../helpers/proxy-run.ts'

describe('authz check and lint with a gateway config', () => {
  let home: string
  const policy = () => join(home, 'policy.yaml')
  const gateway = () => join(home, 'gateway.yaml')

  async function cli(argv: string[]): Promise<{code: number | null; out: string; err: string}> {
    const run = runCli(argv, home)
    const code = await run.exited
    return {code, out: run.stdout(), err: run.stderr()}
  }

  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'toolgate-authz-gateway-'))
    await writeFile(
      policy(),
      [
        'version: "1.0"',
        'type: cedarv1',
        'cedar:',
        '  entities_json: "[]"',
        '  policies:',
        `    - 'permit(principal, action, resource);'`,
        `    - 'forbid(principal, action == Action::"call_tool", resource) when { resource.backend == "prod-db" && !(resource has readOnlyHint && resource.readOnlyHint) };'`,
        `    - 'forbid(principal, action, resource) when { resource.backend == "staging" };'`,
      ].join('\n'),
    )
    await writeFile(
      gateway(),
      ['backends:', '  prod-db: {prefix: db}', '  web: {url: "https://web.example/mcp"}'].join(
        '\n',
      ),
    )
    await writeFile(join(home, 'claims.json'), JSON.stringify({sub: 'alice'}))
  })
  after(() => rm(home, {recursive: true, force: true}))

  it('check: a call on a backend the policy forbids is denied, on another allowed', async () => {
    const check = (name: string, extra: string[] = []) =>
      cli([
        'authz',
        'check',
        '--authz-config',
        policy(),
        '--claims',
        join(home, 'claims.json'),
        '--method',
        'tools/call',
        '--params',
        JSON.stringify({name, arguments: {}}),
        '--gateway-config',
        gateway(),
        '--json',
        ...extra,
      ])
    const denied = await check('db__drop-table')
    assert.equal(denied.code, 1, denied.err)
    const d = JSON.parse(denied.out) as {
      decision: string
      policies: Array<{id: string}>
      request: unknown
    }
    assert.equal(d.decision, 'deny')
    assert.deepEqual(
      d.policies.map((p) => p.id),
      ['policy1'],
    )
    assert.match(JSON.stringify(d.request), /"backend":"prod-db"/)
    const reading = await check('db__query', ['--annotations', '{"readOnlyHint":true}'])
    assert.equal(reading.code, 0, reading.out)
    const web = await check('web__echo')
    assert.equal(web.code, 0, web.out)
    // Without the gateway config the same name has no backend: the forbid errors, which denies.
    const plain = await cli([
      'authz',
      'check',
      '--authz-config',
      policy(),
      '--claims',
      join(home, 'claims.json'),
      '--method',
      'tools/call',
      '--params',
      '{"name":"web__echo"}',
    ])
    assert.equal(plain.code, 1)
    assert.match(plain.out, /does not have the attribute `backend`/)
  })

  it('lint: backend is known with a gateway, and a backend the gateway lacks is named', async () => {
    const withGateway = await cli([
      'authz',
      'lint',
      policy(),
      '--gateway-config',
      gateway(),
      '--json',
    ])
    assert.equal(withGateway.code, 1)
    const findings = (
      JSON.parse(withGateway.out) as {
        findings: Array<{kind: string; policy: string; message: string}>
      }
    ).findings
    assert.deepEqual(
      findings.map((f) => [f.kind, f.policy]),
      [['unknown-backend', 'policy2']],
    )
    assert.match(findings[0]!.message, /no such backend \(prod-db, web\)/)
    const without = await cli(['authz', 'lint', policy(), '--json'])
    const plain = (JSON.parse(without.out) as {findings: Array<{kind: string; message: string}>})
      .findings
    assert.ok(plain.every((f) => f.kind === 'unknown-attribute'))
    assert.match(plain[0]!.message, /a gateway sets it: lint with --gateway-config or --backend/)
    const clean = await cli([
      'authz',
      'lint',
      policy(),
      '--backend',
      'prod-db',
      '--backend',
      'staging',
    ])
    assert.equal(clean.code, 0, clean.out)
  })

  it('a bad gateway config is reported as such, not as a policy problem', async () => {
    const run = await cli(['authz', 'lint', policy(), '--backend', 'x=bad_prefix'])
    assert.equal(run.code, 2)
    assert.match(run.err, /--backend "x=bad_prefix": prefix "bad_prefix"/)
  })
})
