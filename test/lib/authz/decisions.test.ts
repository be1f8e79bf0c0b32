import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {Authorizer} from '../../../src/lib/authz/authorizer.ts'
import {validateAuthzConfig} from '../../../src/lib/authz/policy-file.ts'
import {createLogger} from '../../../src/lib/log/logger.ts'
import {CALL_ECHO, cases} from './decision-cases.ts'

describe('Cedar decisions for MCP requests (contract §6)', () => {
  for (const c of cases) {
    it(`${c.allow ? 'allows' : 'denies'}: ${c.name}`, () => {
      const config = validateAuthzConfig({
        version: '1.0',
        type: 'cedarv1',
        cedar: {
          policies: c.policies,
          entities_json: JSON.stringify(c.entities ?? []),
          group_claim_name: c.groupClaim ?? '',
          role_claim_name: c.roleClaim ?? '',
        },
      })
      // Both with and without the static shortcut and the cache: they must never change a decision.
      for (const options of [{}, {prefilter: false, cacheSize: 0}]) {
        const authz = new Authorizer(config, options)
        const sub = c.sub ?? 'alice'
        const principal = authz.principal(sub, {sub, ...c.claims})
        const spec = {
          action: c.action ?? 'call_tool',
          id: c.id ?? 'echo',
          args: c.args,
          annotations: c.annotations,
        }
        assert.equal(authz.decide(principal, spec).allowed, c.allow)
        assert.equal(
          authz.decide(principal, spec).allowed,
          c.allow,
          'a second (cached) decision agrees',
        )
      }
    })
  }
})

describe('decision cache', () => {
  const config = validateAuthzConfig({
    version: '1.0',
    type: 'cedarv1',
    cedar: {policies: ['permit(principal, action, resource) when { resource.arg_n == 1 };']},
  })

  it('serves a repeated request from the cache and keys on the arguments', () => {
    const authz = new Authorizer(config)
    const p = authz.principal('alice', {sub: 'alice', exp: 1})
    assert.equal(authz.decide(p, {action: 'call_tool', id: 'x', args: {n: 1}}).cached, false)
    assert.equal(authz.decide(p, {action: 'call_tool', id: 'x', args: {n: 1}}).cached, true)
    const other = authz.decide(p, {action: 'call_tool', id: 'x', args: {n: 2}})
    assert.equal(other.cached, false)
    assert.equal(other.allowed, false)
  })

  it('hits across tokens that differ only in claims no policy reads', () => {
    const authz = new Authorizer(config)
    authz.decide(authz.principal('alice', {sub: 'alice', exp: 1, jti: 'a'}), {
      action: 'call_tool',
      id: 'x',
      args: {n: 1},
    })
    const again = authz.decide(authz.principal('alice', {sub: 'alice', exp: 2, jti: 'b'}), {
      action: 'call_tool',
      id: 'x',
      args: {n: 1},
    })
    assert.equal(again.cached, true)
  })

  it('names the erroring policies as the deciding ones and lists them as errored', () => {
    const authz = new Authorizer(
      validateAuthzConfig({
        version: '1.0',
        type: 'cedarv1',
        cedar: {
          policies: [CALL_ECHO, 'permit(principal, action, resource) when { principal.claim_x };'],
        },
      }),
    )
    const d = authz.decide(authz.principal('alice', {}), {action: 'call_tool', id: 'echo'})
    assert.equal(d.allowed, false)
    assert.deepEqual(d.errored, ['policy1'])
    assert.deepEqual(d.policies, ['policy1'])
  })

  it('logs an evaluation error at info once per evaluation, naming the policy and no claim value', () => {
    const lines: string[] = []
    const logger = createLogger({level: 'info', write: (l) => lines.push(l)})
    const authz = new Authorizer(
      validateAuthzConfig({
        version: '1.0',
        type: 'cedarv1',
        cedar: {
          policies: [
            CALL_ECHO,
            'permit(principal, action, resource) when { principal.claim_level > 3 };',
          ],
        },
      }),
      {logger},
    )
    const p = authz.principal('alice', {level: 'secret-claim-value'})
    // Without decision logging (as list filtering does), the error is still logged.
    assert.equal(authz.decide(p, {action: 'call_tool', id: 'echo'}, false).allowed, false)
    assert.equal(authz.decide(p, {action: 'call_tool', id: 'echo'}, false).cached, true)
    const errors = lines.filter((l) => l.includes('authz policy evaluation error'))
    assert.equal(errors.length, 1, lines.join('\n'))
    assert.match(errors[0] as string, /policy1/)
    assert.match(errors[0] as string, /INFO|info/)
    assert.ok(!lines.join('\n').includes('secret-claim-value'), 'a claim value appeared in the log')
  })

  it('names the deciding policies', () => {
    const authz = new Authorizer(
      validateAuthzConfig({
        version: '1.0',
        type: 'cedarv1',
        cedar: {policies: [CALL_ECHO, 'forbid(principal == Client::"bob", action, resource);']},
      }),
    )
    assert.deepEqual(
      authz.decide(authz.principal('alice', {}), {action: 'call_tool', id: 'echo'}).policies,
      ['policy0'],
    )
    assert.deepEqual(
      authz.decide(authz.principal('bob', {}), {action: 'call_tool', id: 'echo'}).policies,
      ['policy1'],
    )
  })
})

describe('policy subsets per exact resource', () => {
  const build = (policies: string[], entities = '[]') =>
    new Authorizer(
      validateAuthzConfig({
        version: '1.0',
        type: 'cedarv1',
        cedar: {policies, entities_json: entities},
      }),
    )

  it('shares one cache entry between tools with equal attributes when no policy depends on which tool it is', () => {
    const authz = build([
      'permit(principal, action == Action::"call_tool", resource) when { resource has readOnlyHint && resource.readOnlyHint };',
    ])
    const p = authz.principal('alice', {})
    assert.equal(
      authz.decide(p, {action: 'call_tool', id: 'a', annotations: {readOnlyHint: true}}).cached,
      false,
    )
    const b = authz.decide(p, {action: 'call_tool', id: 'b', annotations: {readOnlyHint: true}})
    assert.equal(b.cached, true)
    assert.equal(b.allowed, true)
    assert.equal(
      authz.decide(p, {action: 'call_tool', id: 'c', annotations: {readOnlyHint: false}}).allowed,
      false,
    )
  })

  it('keeps tools apart when a condition names the resource', () => {
    const authz = build([
      'permit(principal, action, resource) when { resource == Tool::"a" || resource in ToolgateGroup::"x" };',
    ])
    const p = authz.principal('alice', {})
    assert.equal(authz.decide(p, {action: 'call_tool', id: 'a'}).allowed, true)
    const b = authz.decide(p, {action: 'call_tool', id: 'b'})
    assert.equal(b.cached, false)
    assert.equal(b.allowed, false)
  })

  it('keeps tools apart when entities_json may give them attributes', () => {
    const authz = build(
      ['permit(principal, action, resource) when { resource has owner };'],
      '[{"uid": "Tool::\\"a\\"", "attrs": {"owner": "x"}}]',
    )
    const p = authz.principal('alice', {})
    assert.equal(authz.decide(p, {action: 'call_tool', id: 'a'}).allowed, true)
    assert.equal(authz.decide(p, {action: 'call_tool', id: 'b'}).allowed, false)
  })

  it('an erroring policy for another tool does not affect this one', () => {
    const authz = build([
      'permit(principal, action, resource == Tool::"a");',
      'forbid(principal, action, resource == Tool::"b") when { principal.claim_x };',
    ])
    const p = authz.principal('alice', {})
    assert.equal(authz.decide(p, {action: 'call_tool', id: 'a'}).allowed, true)
    assert.equal(authz.decide(p, {action: 'call_tool', id: 'b'}).allowed, false)
  })
})
