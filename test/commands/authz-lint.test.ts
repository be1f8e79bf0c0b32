/**
 * `toolgate authz lint`: a seeded policy file with one policy per class of problem (and clean
 * policies that must stay quiet), every policy file in examples/, a file that does not load, and
 * the command's exit codes.
 */
import assert from 'node:assert/strict'
import {readdirSync, readFileSync} from 'node:fs'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {lintFile, type Finding} from '../../src/lib/authz/lint.ts'
import {runCli} from '../helpers/proxy-run.ts'

const SEEDED = [
  /* 0 clean */ 'permit(principal in ToolgateGroup::"eng", action == Action::"call_tool", resource == Tool::"echo");',
  /* 1 */ 'permit(principal, action == Action::"call_tool", resource) when { principal.claim_roles.contains("admin") };',
  /* 2 clean */ 'permit(principal, action == Action::"call_tool", resource) when { principal has claim_roles && principal.claim_roles.contains("admin") };',
  /* 3 */ 'permit(principal, action == Action::"call_tol", resource);',
  /* 4 */ 'permit(principal, action == Action::"call_tool", resource is Prompt);',
  /* 5 */ 'permit(principal, action, resource is Widget);',
  /* 6 */ 'permit(principal, action == Action::"get_prompt", resource == Prompt::"secret");',
  /* 7 */ 'forbid(principal, action == Action::"get_prompt", resource);',
  /* 8 */ 'permit(principal, action, resource) when { resource.readOnly };',
  /* 9 */ 'permit(principal, action, resource) when { principal has claim_grups && principal.claim_grups.contains("x") };',
  /* 10 clean */ 'permit(principal, action == Action::"call_tool", resource) when { resource has readOnlyHint && resource.readOnlyHint && resource.name like "get-*" };',
  /* 11 */ 'permit(principal, action, resource) when { resource.arg_env == "dev" };',
  /* 12 clean */ 'permit(principal, action, resource) when { context has claim_act && context.claim_act has sub && context.claim_act.sub == "svc" };',
  /* 13 */ 'permit(principal, action, resource) when { context has claim_act && context.claim_act.sub == "svc" };',
  /* 14 clean */ 'permit(principal, action, resource) when { principal has claim_level } when { principal.claim_level > 3 };',
]

let dir: string
let seeded: string
let claims: string
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tg-authz-lint-'))
  seeded = join(dir, 'seeded.json')
  await writeFile(
    seeded,
    JSON.stringify({version: '1.0', type: 'cedarv1', cedar: {policies: SEEDED}}),
  )
  claims = join(dir, 'claims.json')
  await writeFile(
    claims,
    JSON.stringify({sub: 'alice', groups: ['eng'], roles: ['admin'], level: 4, act: {sub: 'svc'}}),
  )
})
after(() => rm(dir, {recursive: true, force: true}))

const byPolicy = (findings: Finding[]) => {
  const map = new Map<string, string[]>()
  for (const f of findings)
    map.set(f.policy ?? '(file)', [...(map.get(f.policy ?? '(file)') ?? []), f.kind])
  return map
}

describe('authz lint', () => {
  it('finds each class of problem in the seeded file, and nothing in the clean policies', async () => {
    const result = await lintFile(seeded, {
      sampleClaims: JSON.parse(readFileSync(claims, 'utf8')) as Record<string, unknown>,
    })
    assert.equal(result.model, 'proxy')
    const found = byPolicy(result.findings)
    const has = (policy: number, kind: string) =>
      assert.ok(
        found.get(`policy${policy}`)?.includes(kind),
        `policy${policy} ${kind}: ${JSON.stringify(result.findings, null, 1)}`,
      )
    has(1, 'unguarded-attribute') // claim read without has
    has(3, 'never-applies') // unknown action
    has(4, 'never-applies') // call_tool on a Prompt: no such request
    has(5, 'never-applies') // unknown entity type
    has(6, 'shadowed-permit') // policy 7 always forbids it
    has(8, 'unknown-attribute') // readOnly is not an annotation name
    has(9, 'claim-typo')
    has(11, 'unguarded-attribute') // an argument may be absent
    has(13, 'unguarded-attribute') // a field of a record claim may be absent
    for (const clean of [0, 2, 7, 10, 12, 14])
      assert.equal(
        found.get(`policy${clean}`),
        undefined,
        `policy${clean}: ${JSON.stringify(found.get(`policy${clean}`))}`,
      )
    const typo = result.findings.find((f) => f.kind === 'claim-typo')
    assert.match(typo?.message ?? '', /did you mean claim_groups\?/)
  })

  it('without sample claims, reports no claim typos', async () => {
    const result = await lintFile(seeded)
    assert.ok(!result.findings.some((f) => f.kind === 'claim-typo'))
  })

  const examples = readdirSync('examples').filter((f) => /policy.*\.(ya?ml|json)$/.test(f))
  it('the examples hold at least one policy file', () => assert.ok(examples.length > 0))
  for (const file of examples) {
    it(`passes examples/${file}`, async () => {
      const result = await lintFile(join('examples', file))
      assert.deepEqual(result.findings, [])
    })
  }

  it('a registry policy read with the proxy model never applies', async () => {
    const result = await lintFile('examples/teams-policy.yaml', {model: 'proxy'})
    assert.ok(result.findings.some((f) => f.kind === 'never-applies'))
  })

  it('a file that does not load is one invalid finding naming the policy', async () => {
    const bad = join(dir, 'bad.json')
    await writeFile(
      bad,
      JSON.stringify({
        version: '1.0',
        type: 'cedarv1',
        cedar: {
          policies: ['permit(principal, action, resource);', 'permit(principal action, resource);'],
        },
      }),
    )
    const result = await lintFile(bad)
    assert.equal(result.findings.length, 1)
    assert.equal(result.findings[0]?.kind, 'invalid')
    assert.equal(result.findings[0]?.policy, 'policy1')
    assert.match(result.findings[0]?.message ?? '', /cedar\.policies\[1\]/)
  })

  it('the command exits 1 with findings, 0 on a clean file, 2 on a missing claims file', async () => {
    const home = join(dir, 'home')
    const cli = async (argv: string[]) => {
      const run = runCli(['authz', 'lint', ...argv], home)
      return {code: await run.exited, out: run.stdout(), err: run.stderr()}
    }
    const dirty = await cli([seeded, '--claims', claims, '--json'])
    assert.equal(dirty.code, 1, dirty.err)
    assert.ok((JSON.parse(dirty.out) as {findings: unknown[]}).findings.length >= 9)
    const clean = await cli(['examples/teams-policy.yaml'])
    assert.equal(clean.code, 0, clean.err)
    assert.match(clean.out, /no findings \(registry model\)/)
    const missing = await cli([seeded, '--claims', join(dir, 'nope.json')])
    assert.equal(missing.code, 2)
    assert.match(missing.err, /--claims .*nope\.json: no such file/)
  })
})
