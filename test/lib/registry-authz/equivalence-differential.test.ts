/**
 * Differential test of the registry's caller classes (issue 30, finding 1): RegistryPolicy shares
 * slices, decisions and cached pages between callers it puts in one equivalence class. For
 * generated policy sets using every form in which a policy can read the principal — its uid in a
 * scope or a condition (`==`, `in`, `is … in`, sets, records, if-then-else, tags), its parents,
 * its claims, through `principal` and through `context` — every answer RegistryPolicy gives two
 * callers, asked one after the other in both orders, must equal a fresh evaluation by Cedar
 * itself (the policy text, every attribute, no cache, no slicing).
 */
import {test} from 'node:test'
import assert from 'node:assert/strict'
import * as cedar from '@cedar-policy/cedar-wasm/nodejs'
import {validateAuthzConfig} from '../../../src/lib/authz/policy-file.ts'
import {claimAttributes} from '../../../src/lib/authz/claims.ts'
import {EntityModel} from '../../../src/lib/authz/entity-model.ts'
import type {CedarEntity} from '../../../src/lib/authz/cedar-engine.ts'
import {
  RegistryPolicy,
  type RegistryAction,
} from '../../../src/lib/registry-authz/registry-policy.ts'
import {serverEntity} from '../../../src/lib/registry-authz/server-entity.ts'
import {OFFICIAL_META_KEY, type ServerEntry} from '../../../src/lib/registry/types.ts'
import type {Principal} from '../../../src/lib/auth/types.ts'

/** A small deterministic PRNG (mulberry32), so a failing case can be replayed by its seed. */
function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

// Callers chosen to collide: alice and bob differ ONLY by subject (same team, same groups), so a
// class that ignores identity wrongly would merge them; carol differs by groups, dave by a claim.
const CALLERS: Principal[] = [
  {provider: 'p', subject: 'alice', claims: {sub: 'alice', team: 'a', groups: ['g1']}},
  {provider: 'p', subject: 'bob', claims: {sub: 'bob', team: 'a', groups: ['g1']}},
  {provider: 'p', subject: 'carol', claims: {sub: 'carol', team: 'a', groups: ['g2']}},
  {provider: 'p', subject: 'dave', claims: {sub: 'dave', team: 'b', groups: ['g1']}},
]

function entry(name: string, version: string, team: string): ServerEntry {
  return {
    server: {name, version, _meta: {team}},
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

const ENTRIES = [
  entry('io.a/one', '1.0.0', 'a'),
  entry('io.a/two', '1.0.0', 'b'),
  entry('io.b/three', '2.0.0', 'a'),
  entry('io.bob/own', '1.0.0', 'b'),
]

/** Principal scopes, every form Cedar has: some that cannot tell alice from bob, some that can. */
const GROUP_SCOPES = [
  'principal',
  'principal in ToolgateGroup::"g1"',
  'principal in ToolgateGroup::"g2"',
  'principal in ToolgateGroup::"parent"',
  'principal is Client',
  'principal is Client in ToolgateGroup::"g1"',
]
const IDENTITY_SCOPES = [
  'principal == Client::"bob"',
  'principal == Client::"alice"',
  'principal in Client::"bob"',
  'principal in Client::"alice"',
  'principal is Client in Client::"bob"',
]

/** Condition fragments reading the principal (or its claims) in every position. */
const GROUP_CONDITIONS = [
  'principal in [ToolgateGroup::"g1", ToolgateGroup::"g2"]',
  'principal in ToolgateGroup::"g1"',
  'principal in ToolgateGroup::"parent"',
  'principal is Client',
  'principal is Client in ToolgateGroup::"g2"',
  'principal.claim_team == "a"',
  'principal has claim_team && principal.claim_team == "b"',
  'context.claim_team == "a"',
  'resource.namespace == "io.a"',
  'resource.meta.team == principal.claim_team',
  'principal.claim_groups.contains("g2")',
]
const IDENTITY_CONDITIONS = [
  'principal == Client::"bob"',
  'principal != Client::"alice"',
  'principal in Client::"bob"',
  'principal in [Client::"bob", ToolgateGroup::"g2"]',
  'principal is Client in Client::"alice"',
  '[principal].contains(Client::"bob")',
  '{p: principal} == {p: Client::"alice"}',
  '(if principal == Client::"bob" then true else false)',
  'principal.claim_sub like "b*"',
  'context.claim_sub == "bob"',
  'principal.hasTag("x")',
  'resource in principal',
  'resource.namespace == "io.bob" && principal == Client::"bob"',
  'Client::"bob" == principal',
]

function policyText(r: () => number): string {
  const pick = <T>(list: T[]): T => list[Math.floor(r() * list.length)] as T
  const effect = r() < 0.75 ? 'permit' : 'forbid'
  const action = pick([
    'action',
    'action == Action::"list_servers"',
    'action == Action::"get_server"',
  ])
  const resource = pick(['resource', 'resource is Server', 'resource == Server::"io.bob/own"'])
  // Mostly identity-free pieces, so that many sets let two callers share a class and the rest
  // of the set decides whether that sharing is right.
  const scope = r() < 0.7 ? pick(GROUP_SCOPES) : pick(IDENTITY_SCOPES)
  const condition = () => (r() < 0.8 ? pick(GROUP_CONDITIONS) : pick(IDENTITY_CONDITIONS))
  let text = `${effect}(${scope}, ${action}, ${resource})`
  const n = Math.floor(r() * 3)
  if (n > 0) {
    const parts = Array.from({length: n}, condition)
    text += ` when { ${parts.join(r() < 0.5 ? ' && ' : ' || ')} }`
  }
  if (r() < 0.15) text += ` unless { ${condition()} }`
  return text + ';'
}

function entitiesFor(r: () => number): unknown[] {
  // Sometimes a group hierarchy (g1 and g2 under "parent"), sometimes operator attributes.
  const out: unknown[] = []
  if (r() < 0.3) {
    out.push({
      uid: {type: 'ToolgateGroup', id: 'g1'},
      attrs: {},
      parents: [{type: 'ToolgateGroup', id: 'parent'}],
    })
  }
  if (r() < 0.1) out.push({uid: {type: 'Client', id: 'bob'}, attrs: {vip: true}, parents: []})
  return out
}

/** Cedar's own answer from the policy set parsed as `setId`, with every attribute and no cache. */
function fresh(
  setId: string,
  entities: CedarEntity[],
  who: Principal,
  action: RegistryAction,
  e: ServerEntry,
): boolean {
  const model = new EntityModel({groupClaimName: '', roleClaimName: '', entities})
  const part = model.principal(who.subject, who.claims)
  const resource = serverEntity(e, 'default', model)
  const principal: CedarEntity = {
    uid: {type: 'Client', id: who.subject},
    attrs: claimAttributes(who.claims),
    parents: part.entity.parents,
  }
  // entities_json, with the request's principal and resource merged over their own entries.
  const mergedOver = (base: CedarEntity | undefined, ent: CedarEntity): CedarEntity => ({
    uid: ent.uid,
    attrs: {...base?.attrs, ...ent.attrs},
    parents: [...(base?.parents ?? []), ...ent.parents],
  })
  const key = (ent: CedarEntity) => JSON.stringify(ent.uid)
  const byKey = new Map(entities.map((ent) => [key(ent), ent]))
  const all = entities.filter((ent) => key(ent) !== key(principal) && key(ent) !== key(resource))
  all.push(
    mergedOver(byKey.get(key(principal)), principal),
    mergedOver(byKey.get(key(resource)), resource),
  )
  const answer = cedar.statefulIsAuthorized({
    principal: {type: 'Client', id: who.subject},
    action: {type: 'Action', id: action},
    resource: resource.uid as {type: string; id: string},
    context: claimAttributes(who.claims),
    preparsedPolicySetId: setId,
    entities: all,
  })
  assert.equal(answer.type, 'success', JSON.stringify(answer))
  if (answer.type !== 'success') return false
  // toolgate denies when any policy errors (authorizer.ts); the oracle applies the same rule.
  return answer.response.decision === 'allow' && answer.response.diagnostics.errors.length === 0
}

const CASES = 1200

test(`registry caller classes: ${CASES} generated policy sets agree with fresh Cedar evaluation in both orders`, () => {
  let compared = 0
  let sharedClasses = 0
  for (let seed = 1; seed <= CASES; seed++) {
    const r = rng(seed)
    const policies = Array.from({length: 1 + Math.floor(r() * 4)}, () => policyText(r))
    const entities = entitiesFor(r)
    let config
    try {
      config = validateAuthzConfig({
        version: '1.0',
        type: 'cedarv1',
        cedar: {policies, entities_json: JSON.stringify(entities)},
      })
    } catch {
      continue // e.g. `principal.hasTag` on a typeless entity parses; anything that does not is skipped
    }
    const i = Math.floor(r() * CALLERS.length)
    const j = (i + 1 + Math.floor(r() * (CALLERS.length - 1))) % CALLERS.length
    const first = CALLERS[i]!
    const second = CALLERS[j]!
    const policy = new RegistryPolicy(config)
    // The oracle: the same policy text parsed by Cedar on its own, evaluated with no shortcut.
    const oracle = `oracle-${seed}`
    const parsed = cedar.preparsePolicySet(oracle, {
      staticPolicies: Object.fromEntries(policies.map((p, k) => [`policy${k}`, p])),
    })
    assert.equal(parsed.type, 'success')
    const ask = (who: Principal) => {
      const viewer = policy.viewer(who)
      return {
        viewer,
        answers: ENTRIES.flatMap((e) =>
          (['list_servers', 'get_server'] as const).map((action) => ({
            action,
            e,
            allowed: viewer.allows(action, 'default', e.server.name, e.server.version, () => e),
          })),
        ),
      }
    }
    // first, second, first again: whatever the first caller left in the caches, the second must
    // not inherit, and vice versa.
    const rounds = [first, second, first].map((who) => ({who, ...ask(who)}))
    if (rounds[0]!.viewer.classKey === rounds[1]!.viewer.classKey) sharedClasses++
    for (const {who, answers} of rounds) {
      for (const {action, e, allowed} of answers) {
        const expected = fresh(oracle, config.entities, who, action, e)
        assert.equal(
          allowed,
          expected,
          `seed ${seed}: ${who.subject} ${action} ${e.server.name}\n${policies.join('\n')}\nentities ${JSON.stringify(entities)}`,
        )
        compared++
      }
    }
  }
  // The generator must exercise both outcomes: classes shared (identity-free sets) and not.
  assert.ok(compared > CASES * 16, `compared ${compared}`)
  assert.ok(sharedClasses > 50, `only ${sharedClasses} cases put both callers in one class`)
})
