/**
 * Cedar decisions for MCP requests: the policy set is parsed once at construction, each decision
 * is cached by its full Cedar request, and every evaluation problem denies (spec: default deny,
 * forbid beats permit, "a policy that throws an evaluation error … results in a deny"; contract
 * §6). Cedar itself skips a policy whose evaluation fails and may still allow through another
 * permit; toolgate applies the spec literally instead: if ANY policy errors while a request is
 * evaluated, the request is denied, whatever the other policies say. Operators guard optional
 * attributes with `has` (`principal has claim_roles && principal.claim_roles.contains("x")`) so
 * that a token lacking a claim is a plain false, not an error.
 */
import type {Logger} from '../log/logger.ts'
import {ToolgateError} from '../errors.ts'
import {
  authorize,
  policyToJson,
  preparsePolicySet,
  type CedarEntity,
  type CedarPolicyJson,
} from './cedar-engine.ts'
import {LruCache} from '../cache/lru.ts'
import {
  EntityModel,
  type BuiltRequest,
  type PrincipalPart,
  type ResourceAttributes,
  type ResourceSpec,
} from './entity-model.ts'
import type {AuthzConfig} from './policy-file.ts'
import {uidKey} from './entities-json.ts'
import {
  exactResource,
  PermitIndex,
  referencedAttributes,
  usesPrincipalIdentity,
  usesResourceIdentity,
} from './policy-analysis.ts'

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
  /** Attributes added to resources by id (a gateway's `backend`). */
  resourceAttributes?: ResourceAttributes | undefined
}

let setCounter = 0

export class Authorizer {
  readonly model: EntityModel
  readonly #general: PolicySubset
  readonly #byResource = new Map<string, PolicySubset>()
  readonly #cache: LruCache<string, Decision>
  readonly #permits: PermitIndex | undefined
  readonly #logger: Logger | undefined
  readonly #principalIdentity: boolean

  constructor(config: AuthzConfig, options: AuthorizerOptions = {}) {
    const ids = Object.keys(config.policies)
    const asts: CedarPolicyJson[] = ids.map((id) => policyToJson(config.policies[id] as string))
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
      const problem = preparsePolicySet(
        id,
        Object.fromEntries(
          members.map((i) => [ids[i] as string, config.policies[ids[i] as string] as string]),
        ),
      )
      if (problem !== undefined)
        throw new ToolgateError('ERR_POLICY_INVALID', `cedar.policies: ${problem}`)
      const identity =
        usesResourceIdentity(members.map((i) => asts[i] as CedarPolicyJson)) ||
        definedTypes.size > 0
      return {id, identity}
    }
    this.#general = prepare('general', general)
    let n = 0
    for (const [key, members] of exact)
      this.#byResource.set(
        key,
        prepare(
          `r${n++}`,
          [...members, ...general].sort((a, b) => a - b),
        ),
      )
    this.model = new EntityModel({
      groupClaimName: config.groupClaimName,
      roleClaimName: config.roleClaimName,
      entities: config.entities,
      referenced: referencedAttributes(asts),
      resourceAttributes: options.resourceAttributes,
    })
    const actionHierarchy = config.entities.some(
      (e) => (e.uid as {type?: string}).type === 'Action',
    )
    this.#permits = options.prefilter === false ? undefined : new PermitIndex(asts, actionHierarchy)
    // Decisions are cached by the full Cedar request: policies and entities_json are immutable once
    // loaded, so the same request always gets the same answer (no expiry needed).
    this.#cache = new LruCache({maxEntries: options.cacheSize ?? 10_000})
    this.#logger = options.logger
    this.#principalIdentity = usesPrincipalIdentity(asts) || definedTypes.has('Client')
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

  /**
   * Decides `action` on any resource entity, without a decision line in the log (the registry
   * filters lists with this and logs one line per request). `cache: false` skips the decision
   * cache for callers that keep their own.
   */
  decideEntity(
    principal: PrincipalPart,
    action: string,
    resource: CedarEntity,
    options: {cache?: boolean} = {},
  ): Decision {
    return this.#evaluate(this.model.buildFor(principal, action, resource), options.cache ?? true)
  }

  /**
   * Text that is equal for two principals whenever every policy must answer them alike: their
   * referenced claims and their groups, plus their id only when a policy can tell ids apart
   * (`principal == Client::"x"`, or Client entities in entities_json). Callers with the same key
   * may share cached results.
   */
  equivalenceKey(principal: PrincipalPart): string {
    if (this.#principalIdentity) return principal.key
    return JSON.stringify([principal.entity.attrs, principal.entity.parents])
  }

  #decide(principal: PrincipalPart, spec: ResourceSpec): Decision {
    return this.#evaluate(this.model.build(principal, spec), true)
  }

  #evaluate(built: BuiltRequest, useCache: boolean): Decision {
    const {request, key: fullKey, identityFreeKey} = built
    const subset = this.#byResource.get(uidKey(request.resource)) ?? this.#general
    const key = `${subset.id}\n${subset.identity ? fullKey : identityFreeKey}`
    const hit = useCache ? this.#cache.get(key) : undefined
    if (hit) return {...hit, cached: true}
    let decision: Decision
    if (
      this.#permits &&
      !this.#permits.mayPermit(request.principal, request.action, request.resource)
    ) {
      decision = {allowed: false, policies: [], errored: [], cached: false}
    } else {
      const answer = authorize(subset.id, request)
      const errored = answer.errors.map((e) => e.policyId || '(request)')
      decision = {
        allowed: answer.decision === 'allow' && errored.length === 0,
        policies: errored.length > 0 ? errored : answer.reasons,
        errored,
        cached: false,
      }
      // Once per evaluation (not per cache hit), and also for list items, which log no decision
      // line of their own. Policy ids only: Cedar's messages may quote claim values.
      if (errored.length > 0) {
        this.#logger?.info('authz policy evaluation error', {
          principal: `${request.principal.type}::${JSON.stringify(request.principal.id)}`,
          action: `${request.action.type}::${JSON.stringify(request.action.id)}`,
          resource: `${request.resource.type}::${JSON.stringify(request.resource.id)}`,
          errored: errored.join(','),
          decision: 'deny',
        })
      }
    }
    if (useCache) this.#cache.set(key, decision)
    return decision
  }
}
