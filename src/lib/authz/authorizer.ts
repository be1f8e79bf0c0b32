/**
 * Cedar decisions for MCP requests: the policy set is parsed once at construction, each decision
 * is cached by its full Cedar request, and every evaluation problem denies (spec: default deny,
 * forbid beats permit, an evaluation error denies). Cedar itself skips a policy whose evaluation
 * fails: an erroring permit therefore cannot allow. An erroring forbid is treated as satisfied
 * (deny), because a forbid that could not be evaluated may have been meant to apply; an erroring
 * permit does not deny on its own, so one permit reading a claim some tokens lack does not lock
 * out requests that another permit allows.
 */
import type {Logger} from '../log/logger.ts'
import {ToolgateError} from '../errors.ts'
import {authorize, policyToJson, preparsePolicySet, type CedarPolicyJson} from './cedar-engine.ts'
import {LruCache} from './decision-cache.ts'
import {EntityModel, type PrincipalPart, type ResourceSpec} from './entity-model.ts'
import type {AuthzConfig} from './policy-file.ts'
import {uidKey} from './entities-json.ts'
import {exactResource, PermitIndex, referencedAttributes, usesResourceIdentity} from './policy-analysis.ts'

/**
 * One preparsed policy set. Policies whose scope names an exact resource (`resource == Tool::"x"`)
 * can only apply to that resource, so a request for `x` is evaluated against the set holding the
 * policies for `x` plus every policy without an exact resource, and a request for anything else
 * against the latter alone. Cedar checks the scope before the conditions, so a left-out policy
 * could neither be satisfied nor fail: decisions, deciding policies and errors are unchanged, while
 * the engine evaluates a handful of policies instead of hundreds.
 */
interface PolicySubset {
  id: string
  /** False when the answer depends only on the resource's type and attributes (see usesResourceIdentity). */
  identity: boolean
}

export interface Decision {
  allowed: boolean
  /** Policies that determined the decision (empty: default deny). */
  policies: string[]
  /** Policies whose evaluation failed. */
  errored: string[]
  cached: boolean
}

export interface AuthorizerOptions {
  logger?: Logger | undefined
  /** Decision cache entries; 0 disables the cache. */
  cacheSize?: number
  /** Skip the static "no permit can apply" shortcut (benchmarks measure the engine with it off). */
  prefilter?: boolean
}

let setCounter = 0

export class Authorizer {
  readonly model: EntityModel
  readonly #general: PolicySubset
  readonly #byResource = new Map<string, PolicySubset>()
  readonly #cache: LruCache<Decision>
  readonly #permits: PermitIndex | undefined
  readonly #logger: Logger | undefined
  readonly #forbids: Set<string>

  constructor(config: AuthzConfig, options: AuthorizerOptions = {}) {
    const ids = Object.keys(config.policies)
    const asts: CedarPolicyJson[] = ids.map((id) => policyToJson(config.policies[id] as string))
    this.#forbids = new Set(ids.filter((_, i) => asts[i]?.effect === 'forbid'))
    const base = `toolgate-authz-${++setCounter}`
    const general: number[] = []
    const exact = new Map<string, number[]>()
    asts.forEach((ast, i) => {
      const uid = exactResource(ast)
      if (!uid) general.push(i)
      else exact.set(uidKey(uid), [...(exact.get(uidKey(uid)) ?? []), i])
    })
    // A resource type that entities_json defines may carry operator attributes merged by uid.
    const definedTypes = new Set(config.entities.map((e) => (e.uid as {type: string}).type))
    const prepare = (suffix: string, members: number[]): PolicySubset => {
      const id = `${base}-${suffix}`
      const problem = preparsePolicySet(id, Object.fromEntries(members.map((i) => [ids[i] as string, config.policies[ids[i] as string] as string])))
      if (problem !== undefined) throw new ToolgateError('ERR_POLICY_INVALID', `cedar.policies: ${problem}`)
      const identity = usesResourceIdentity(members.map((i) => asts[i] as CedarPolicyJson)) || definedTypes.size > 0
      return {id, identity}
    }
    this.#general = prepare('general', general)
    let n = 0
    for (const [key, members] of exact) this.#byResource.set(key, prepare(`r${n++}`, [...members, ...general].sort((a, b) => a - b)))
    this.model = new EntityModel({
      groupClaimName: config.groupClaimName,
      roleClaimName: config.roleClaimName,
      entities: config.entities,
      referenced: referencedAttributes(asts),
    })
    const actionHierarchy = config.entities.some((e) => (e.uid as {type?: string}).type === 'Action')
    this.#permits = options.prefilter === false ? undefined : new PermitIndex(asts, actionHierarchy)
    this.#cache = new LruCache(options.cacheSize ?? 10_000)
    this.#logger = options.logger
  }

  principal(subject: string, claims: Record<string, unknown>): PrincipalPart {
    return this.model.principal(subject, claims)
  }

  /** Decides one request. `log: false` is for list filtering, which logs one summary line instead. */
  decide(principal: PrincipalPart, spec: ResourceSpec, log = true): Decision {
    const decision = this.#decide(principal, spec)
    if (log && this.#logger) {
      const fields = {
        principal: `Client::${JSON.stringify(principal.uid.id)}`,
        action: `Action::${JSON.stringify(spec.action)}`,
        resource: `${this.model.resourceUid(spec).type}::${JSON.stringify(spec.id)}`,
        decision: decision.allowed ? 'allow' : 'deny',
        policies: decision.policies.join(',') || undefined,
        errored: decision.errored.join(',') || undefined,
        cached: decision.cached || undefined,
      }
      if (decision.allowed) this.#logger.debug('authz decision', fields)
      else this.#logger.info('authz decision', fields)
    }
    return decision
  }

  #decide(principal: PrincipalPart, spec: ResourceSpec): Decision {
    const {request, key: fullKey, identityFreeKey} = this.model.build(principal, spec)
    const subset = this.#byResource.get(uidKey(request.resource)) ?? this.#general
    const key = `${subset.id}\n${subset.identity ? fullKey : identityFreeKey}`
    const hit = this.#cache.get(key)
    if (hit) return {...hit, cached: true}
    let decision: Decision
    if (this.#permits && !this.#permits.mayPermit(request.principal, request.action, request.resource)) {
      decision = {allowed: false, policies: [], errored: [], cached: false}
    } else {
      const answer = authorize(subset.id, request)
      const erroredForbids = answer.errors.filter((e) => this.#forbids.has(e.policyId)).map((e) => e.policyId)
      decision = {
        allowed: answer.decision === 'allow' && erroredForbids.length === 0,
        policies: erroredForbids.length > 0 ? erroredForbids : answer.reasons,
        errored: answer.errors.map((e) => e.policyId || '(request)'),
        cached: false,
      }
    }
    this.#cache.set(key, decision)
    return decision
  }
}
