/**
 * The shortcuts of RegistryPolicy (per-class policy slices, decisions shared by rows with equal
 * read attributes, unnamed `meta` fields left out) must never change a decision: each case here
 * is one where a careless shortcut would.
 */
import {test} from 'node:test'
import assert from 'node:assert/strict'
import {validateAuthzConfig} from '../../../src/lib/authz/policy-file.ts'
import {policyToJson} from '../../../src/lib/authz/cedar-engine.ts'
import {principalScopeMayMatch, usedAsWholeValue} from '../../../src/lib/authz/policy-analysis.ts'
import {RegistryPolicy} from '../../../src/lib/registry-authz/registry-policy.ts'
import {OFFICIAL_META_KEY, type ServerEntry} from '../../../src/lib/registry/types.ts'
import type {Principal} from '../../../src/lib/auth/types.ts'

function policyOf(policies: string[], entities: unknown[] = []): RegistryPolicy {
  return new RegistryPolicy(
    validateAuthzConfig({
      version: '1.0',
      type: 'cedarv1',
      cedar: {policies, entities_json: JSON.stringify(entities)},
    }),
  )
}

function entry(name: string, version: string, meta?: Record<string, unknown>): ServerEntry {
  return {
    server: {name, version, ...(meta ? {_meta: meta} : {})},
    _meta: {
      [OFFICIAL_META_KEY]: {
        status: 'active',
        publishedAt: '2025-01-01T00:00:00Z',
        updatedAt: '2025-01-01T00:00:00Z',
        isLatest: true,
      },
    },
  }
}

const caller = (groups: string[], sub = 'u'): Principal => ({
  provider: 'p',
  subject: sub,
  claims: {sub, groups},
})

function sees(policy: RegistryPolicy, who: Principal | undefined, e: ServerEntry): boolean {
  return policy
    .viewer(who)
    .allows('list_servers', 'default', e.server.name, e.server.version, () => e)
}

test('principal scopes: which policies a principal can match', () => {
  const uid = {type: 'Client', id: 'u'}
  const parents = [{type: 'ToolgateGroup', id: 'a'}]
  const may = (text: string, hierarchy = false) =>
    principalScopeMayMatch(policyToJson(text), uid, parents, hierarchy)
  assert.equal(may('permit(principal, action, resource);'), true)
  assert.equal(may('permit(principal in ToolgateGroup::"a", action, resource);'), true)
  assert.equal(may('permit(principal in ToolgateGroup::"b", action, resource);'), false)
  assert.equal(may('permit(principal in ToolgateGroup::"b", action, resource);', true), true)
  assert.equal(may('permit(principal == Client::"u", action, resource);'), true)
  assert.equal(may('permit(principal == Client::"v", action, resource);'), false)
  assert.equal(may('permit(principal is Client in ToolgateGroup::"a", action, resource);'), true)
  assert.equal(may('permit(principal is Client in ToolgateGroup::"b", action, resource);'), false)
  assert.equal(may('permit(principal is ToolgateGroup, action, resource);'), false)
})

test('whole-value uses of an attribute are told apart from field reads', () => {
  const whole = (text: string) => usedAsWholeValue([policyToJson(text)], 'meta')
  assert.equal(
    whole('permit(principal, action, resource) when { resource.meta.team == "a" };'),
    false,
  )
  assert.equal(whole('permit(principal, action, resource) when { resource.meta has team };'), false)
  assert.equal(whole('permit(principal, action, resource) when { resource.meta == {} };'), true)
  assert.equal(
    whole('permit(principal, action, resource) when { [resource.meta].contains({"a": 1}) };'),
    true,
  )
})

test('a group hierarchy in entities_json keeps `in` policies of parent groups', () => {
  const policy = policyOf(
    ['permit(principal in ToolgateGroup::"engineering", action, resource);'],
    [{uid: 'ToolgateGroup::"team-a"', attrs: {}, parents: ['ToolgateGroup::"engineering"']}],
  )
  assert.equal(sees(policy, caller(['team-a']), entry('io.x/a', '1')), true)
  assert.equal(sees(policy, caller(['team-z']), entry('io.x/a', '1')), false)
})

test('a caller no permit can match sees nothing; others are unaffected', () => {
  const policy = policyOf([
    'permit(principal in ToolgateGroup::"a", action, resource);',
    'forbid(principal, action, resource) when { resource.version == "9" };',
  ])
  const nobody = policy.viewer(caller(['z']))
  assert.equal(nobody.seesNothing, true)
  assert.equal(policy.viewer(caller(['a'])).seesNothing, false)
  assert.equal(sees(policy, caller(['a']), entry('io.x/a', '1')), true)
  assert.equal(sees(policy, caller(['a']), entry('io.x/a', '9')), false)
})

test('rows with equal read attributes share a decision, but never across what policies read', () => {
  // Only the namespace is read: two versions of one namespace share; another namespace does not.
  const policy = policyOf([
    'permit(principal, action, resource) when { resource.namespace == "io.a" };',
  ])
  const who = caller(['x'])
  assert.equal(sees(policy, who, entry('io.a/one', '1')), true)
  assert.equal(sees(policy, who, entry('io.a/two', '2')), true)
  assert.equal(sees(policy, who, entry('io.b/one', '1')), false)
  // A policy on the resource itself: the dedup is off, each server decided on its own.
  const exact = policyOf(['permit(principal, action, resource == Server::"io.a/one");'])
  assert.equal(sees(exact, who, entry('io.a/one', '1')), true)
  assert.equal(sees(exact, who, entry('io.a/two', '1')), false)
})

test('unnamed meta fields are left out only when no policy reads meta whole', () => {
  const byField = policyOf([
    'permit(principal, action, resource) when { resource.meta has team && resource.meta.team == "a" };',
  ])
  const who = caller(['x'])
  assert.equal(sees(byField, who, entry('io.a/one', '1', {team: 'a', releasedAt: '1'})), true)
  assert.equal(sees(byField, who, entry('io.a/two', '1', {team: 'b', releasedAt: '1'})), false)
  // `resource.meta == {"team": "a"}` depends on every field: {team, releasedAt} is not equal.
  const whole = policyOf([
    'permit(principal, action, resource) when { resource.meta == {"team": "a"} };',
  ])
  assert.equal(sees(whole, who, entry('io.a/one', '1', {team: 'a'})), true)
  assert.equal(sees(whole, who, entry('io.a/two', '1', {team: 'a', releasedAt: '1'})), false)
})
