/**
 * Static facts about the loaded policies, used to keep each Cedar call small without changing any
 * decision:
 *
 * - Referenced attribute names. Cedar reads attributes only by literal name (`.attr`, `has attr`),
 *   so an attribute no policy names cannot influence a decision; leaving it out of the request
 *   shrinks the data copied into the engine and makes the decision cache hit across tokens that
 *   differ only in `exp`/`iat`/`jti`. If a policy uses `context` as a whole value, nothing is left out.
 * - Permit scopes. Cedar allows only when some `permit` is satisfied; when no permit's scope can
 *   match the request's principal/action/resource, the answer is deny without calling the engine.
 */
import type {CedarEntityUid, CedarPolicyJson} from './cedar-engine.ts'
import {uidKey} from './entities-json.ts'

type Constraint = {
  op: string
  entity?: unknown
  entities?: unknown[]
  entity_type?: string
  in?: unknown
  slot?: string
}

function uidOf(value: unknown): CedarEntityUid | undefined {
  const v = (value as {__entity?: unknown})?.__entity ?? value
  const u = v as {type?: unknown; id?: unknown}
  return typeof u?.type === 'string' && typeof u?.id === 'string'
    ? {type: u.type, id: u.id}
    : undefined
}

/** Collects attribute names and whether `context` is used as a whole value. */
export function referencedAttributes(policies: CedarPolicyJson[]): Set<string> | undefined {
  const names = new Set<string>()
  let wholeContext = false
  const visit = (node: unknown, accessed: boolean): void => {
    if (Array.isArray(node)) {
      for (const n of node) visit(n, false)
      return
    }
    if (typeof node !== 'object' || node === null) return
    const obj = node as Record<string, unknown>
    for (const [key, value] of Object.entries(obj)) {
      if (key === 'Value') continue // literal data, not expressions
      if ((key === '.' || key === 'has') && typeof value === 'object' && value !== null) {
        const {left, attr} = value as {left?: unknown; attr?: unknown}
        if (typeof attr === 'string') names.add(attr)
        else if (Array.isArray(attr)) for (const a of attr) if (typeof a === 'string') names.add(a)
        visit(left, true)
        continue
      }
      if (key === 'Var' && value === 'context' && !accessed) wholeContext = true
      visit(value, false)
    }
  }
  for (const p of policies) visit((p as {conditions?: unknown}).conditions ?? [], false)
  return wholeContext ? undefined : names
}

interface PermitScope {
  principal: Constraint
  action: Constraint
  resource: Constraint
}

function matchesEq(c: Constraint, uid: CedarEntityUid): boolean {
  if (c.slot !== undefined) return true
  const e = uidOf(c.entity)
  return e === undefined || (e.type === uid.type && e.id === uid.id)
}

function principalOrResourcePossible(c: Constraint, uid: CedarEntityUid): boolean {
  switch (c.op) {
    case '==':
      return matchesEq(c, uid)
    case 'is':
      return c.entity_type === undefined || c.entity_type === uid.type
    default:
      return true // All, `in` (hierarchy), anything unknown: possibly applicable
  }
}

/** Index of permit policies by the exact resource they name, for the "no permit can apply" test. */
export class PermitIndex {
  readonly #byResource = new Map<string, PermitScope[]>()
  readonly #anyResource: PermitScope[] = []
  readonly #actionHierarchy: boolean

  /** `actionHierarchy`: entities_json defines Action entities, so `action in` may match via parents. */
  constructor(policies: CedarPolicyJson[], actionHierarchy: boolean) {
    this.#actionHierarchy = actionHierarchy
    for (const p of policies) {
      if (p.effect !== 'permit') continue
      const scope = {
        principal: p.principal,
        action: p.action,
        resource: p.resource,
      } as unknown as PermitScope
      const exact =
        scope.resource.op === '==' && scope.resource.slot === undefined
          ? uidOf(scope.resource.entity)
          : undefined
      if (exact) {
        const key = uidKey(exact)
        const list = this.#byResource.get(key) ?? []
        list.push(scope)
        this.#byResource.set(key, list)
      } else this.#anyResource.push(scope)
    }
  }

  #actionPossible(c: Constraint, action: CedarEntityUid): boolean {
    if (c.op === '==') return matchesEq(c, action)
    if (c.op === 'in') {
      if (this.#actionHierarchy) return true
      const list = c.entities ?? [c.entity]
      return list.some((e) => {
        const u = uidOf(e)
        return u === undefined || (u.type === action.type && u.id === action.id)
      })
    }
    return true
  }

  #possible(
    s: PermitScope,
    principal: CedarEntityUid,
    action: CedarEntityUid,
    resource: CedarEntityUid,
  ): boolean {
    return (
      this.#actionPossible(s.action, action) &&
      principalOrResourcePossible(s.principal, principal) &&
      principalOrResourcePossible(s.resource, resource)
    )
  }

  /** False only when Cedar would certainly deny: no permit policy's scope can match. */
  mayPermit(principal: CedarEntityUid, action: CedarEntityUid, resource: CedarEntityUid): boolean {
    for (const s of this.#anyResource)
      if (this.#possible(s, principal, action, resource)) return true
    const exact = this.#byResource.get(uidKey(resource))
    if (exact)
      for (const s of exact) if (this.#possible(s, principal, action, resource)) return true
    return false
  }
}

/** The exact resource a policy's scope names (`resource == T::"x"`), if any. */
export function exactResource(policy: CedarPolicyJson): CedarEntityUid | undefined {
  const r = (policy as unknown as {resource: Constraint}).resource
  return r.op === '==' && r.slot === undefined ? uidOf(r.entity) : undefined
}

/**
 * Whether the decision of these policies can depend on which resource it is, beyond the
 * resource's type and attributes: a resource scope other than `All`/`is`, or `resource` used as a
 * value in a condition (`resource == …`, `resource in …`). When it cannot, requests for two tools
 * with the same attributes get the same answer, and one cache entry serves both.
 */
export function usesResourceIdentity(policies: CedarPolicyJson[]): boolean {
  for (const p of policies) {
    const op = (p as unknown as {resource: Constraint}).resource.op
    if (op !== 'All' && op !== 'is') return true
    const inner = (p as unknown as {resource: Constraint}).resource.in
    if (inner !== undefined) return true
  }
  return anyExpression(
    policies,
    (key, value, accessed) => key === 'Var' && value === 'resource' && !accessed,
  )
}

/**
 * Walks every condition expression (Cedar's JSON form) of the policies and says whether `found`
 * holds for some `key: value` pair. `accessed` is true for the object on the left of `.` or
 * `has` (an entity or record whose field is read, not used as a whole value). Literal data
 * (`Value`) is not an expression and is skipped.
 */
function anyExpression(
  policies: CedarPolicyJson[],
  found: (key: string, value: unknown, accessed: boolean) => boolean,
): boolean {
  let hit = false
  const visit = (node: unknown, accessed: boolean): void => {
    if (hit) return
    if (Array.isArray(node)) {
      for (const n of node) visit(n, false)
      return
    }
    if (typeof node !== 'object' || node === null) return
    for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
      if (key === 'Value') continue
      if (found(key, value, accessed)) {
        hit = true
        return
      }
      if ((key === '.' || key === 'has') && typeof value === 'object' && value !== null) {
        visit((value as {left?: unknown}).left, true)
        continue
      }
      visit(value, false)
    }
  }
  for (const p of policies) visit((p as {conditions?: unknown}).conditions ?? [], false)
  return hit
}

/**
 * Whether the decision of these policies can depend on who the principal is, beyond what the
 * equivalence key already holds (its referenced attributes and its parents, the groups). It is a
 * whitelist, so a form nobody thought of counts as identity (two callers are then never shared):
 * the principal may appear only
 * - in a scope that is `All`, `is T`, `in ToolgateGroup::"g"` or `is T in ToolgateGroup::"g"`;
 * - in a condition, on the left of `.`/`has` (an attribute read), of `in` with a literal group or
 *   set of literal groups on the right, or of `is` (with such an `in`, or none).
 * Anything else — `==`, a slot, `in Client::"bob"` (true for bob alone), `in resource.owner`,
 * `[principal]`, `{p: principal}`, `principal.getTag(…)`, an extension call — uses identity.
 * Group membership is decided by the parents (in the key) and entities_json, which is fixed, so a
 * literal group target cannot tell two callers with the same parents apart.
 */
export function usesPrincipalIdentity(policies: CedarPolicyJson[]): boolean {
  for (const p of policies) {
    if (!identityFreeScope((p as unknown as {principal: Constraint}).principal)) return true
    if (principalUsedAsValue((p as {conditions?: unknown}).conditions ?? [])) return true
  }
  return false
}

/** The entity type of groups taken from token claims (contract §6). */
const GROUP_TYPE = 'ToolgateGroup'

function identityFreeScope(c: Constraint): boolean {
  if (c.slot !== undefined) return false
  switch (c.op) {
    case 'All':
      return true
    case 'in':
      return uidOf(c.entity)?.type === GROUP_TYPE
    case 'is': {
      if (c.in === undefined) return true
      const target = (c.in as {entity?: unknown; slot?: unknown}) ?? {}
      return target.slot === undefined && uidOf(target.entity)?.type === GROUP_TYPE
    }
    default:
      return false
  }
}

/** A literal group (`ToolgateGroup::"g"`) or a set of literal groups, as an expression. */
function literalGroups(node: unknown): boolean {
  if (typeof node !== 'object' || node === null) return false
  const n = node as {Value?: unknown; Set?: unknown}
  if ('Value' in n) {
    const v = n.Value
    const items = Array.isArray(v) ? v : [v]
    return items.length > 0 && items.every((item) => uidOf(item)?.type === GROUP_TYPE)
  }
  if (Array.isArray(n.Set)) return n.Set.every(literalGroups)
  return false
}

function principalUsedAsValue(conditions: unknown): boolean {
  let used = false
  const visit = (node: unknown): void => {
    if (used) return
    if (Array.isArray(node)) {
      for (const n of node) visit(n)
      return
    }
    if (typeof node !== 'object' || node === null) return
    for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
      if (key === 'Value') continue
      if (typeof value === 'object' && value !== null) {
        const op = value as {left?: unknown; right?: unknown; in?: unknown}
        if (isVar(op.left, 'principal')) {
          if (key === '.' || key === 'has') continue
          if (key === 'in' && literalGroups(op.right)) continue
          if (key === 'is' && (op.in === undefined || literalGroups(op.in))) continue
        }
      }
      if (key === 'Var' && value === 'principal') {
        used = true
        return
      }
      visit(value)
    }
  }
  visit(conditions)
  return used
}

function isVar(node: unknown, name: string): boolean {
  return typeof node === 'object' && node !== null && (node as {Var?: unknown}).Var === name
}

/**
 * Whether a policy's principal scope can match a principal with this uid and these parents, when
 * group entities have no parents of their own (no hierarchy in entities_json; with one, pass
 * `hierarchy` and every `in` scope is kept). A policy whose scope cannot match is skipped by
 * Cedar before its conditions, so leaving it out of the set evaluated for that principal changes
 * no decision, deciding policy or error.
 */
export function principalScopeMayMatch(
  policy: CedarPolicyJson,
  uid: CedarEntityUid,
  parents: CedarEntityUid[],
  hierarchy: boolean,
): boolean {
  const c = (policy as unknown as {principal: Constraint}).principal
  if (c.slot !== undefined) return true
  const inMatches = (target: unknown): boolean => {
    if (hierarchy) return true
    const e = uidOf(target)
    if (e === undefined) return true
    if (e.type === uid.type && e.id === uid.id) return true
    return parents.some((p) => p.type === e.type && p.id === e.id)
  }
  switch (c.op) {
    case 'All':
      return true
    case '==':
      return matchesEq(c, uid)
    case 'in':
      return inMatches(c.entity)
    case 'is':
      return (
        (c.entity_type === undefined || c.entity_type === uid.type) &&
        (c.in === undefined || inMatches((c.in as {entity?: unknown}).entity ?? c.in))
      )
    default:
      return true
  }
}

/**
 * Whether any policy uses attribute `attr` of some entity as a whole value (`resource.meta ==
 * {…}`, `resource.meta.contains(…)`) rather than only reading its fields (`resource.meta.team`,
 * `resource.meta has team`). When it does not, fields of that record that no policy names cannot
 * influence a decision and may be left out of requests.
 */
export function usedAsWholeValue(policies: CedarPolicyJson[], attr: string): boolean {
  return anyExpression(
    policies,
    (key, value, accessed) =>
      key === '.' && (value as {attr?: unknown} | null)?.attr === attr && !accessed,
  )
}

/**
 * Whether a policy's action scope names `Action::"<id>"` itself (`action == Action::"id"` or
 * `action in [.., Action::"id", ..]`), not merely admits it (`action`, an action group). Registry
 * writes count only permits that name them: a read policy written as `permit(principal, action,
 * resource)` before publishing existed must not start granting it (docs/registry-publish.md).
 */
export function namesAction(policy: CedarPolicyJson, id: string): boolean {
  const c = (policy as unknown as {action: Constraint}).action
  if (c.slot !== undefined) return false
  const named = (e: unknown) => {
    const u = uidOf(e)
    return u !== undefined && u.type === 'Action' && u.id === id
  }
  if (c.op === '==') return named(c.entity)
  if (c.op === 'in') return (c.entities ?? [c.entity]).some(named)
  return false
}
