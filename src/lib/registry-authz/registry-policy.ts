/**
 * Cedar decisions for registry reads (docs/registry-authz.md): who may see which servers.
 * Principal `Client::"<sub>"` exactly as the proxy builds it (claims as `claim_*`, groups and roles
 * as `ToolgateGroup` parents), or `Client::"anonymous"` with no claims for a caller without a token
 * (anonymous mode, public paths); actions `Action::"list_servers"` (each item of a list) and
 * `Action::"get_server"` (the versions routes); resource `Server::"<name>"` (server-entity.ts).
 *
 * A registry holds up to ~10^5 versions and one engine call costs 40–200 µs, so a list filtered
 * for a caller who sees 10% would cost seconds if every row were evaluated. Three things keep it
 * to a few engine calls per caller class, none of which changes a decision:
 * - slicing: callers are grouped in equivalence classes (Authorizer.equivalenceKey); each class is
 *   evaluated against only the policies whose principal scope can match it (a team's caller never
 *   against another team's `principal in ToolgateGroup::"…"` policies), and a class no permit can
 *   match sees nothing without any call;
 * - attribute dedup: when the sliced policies cannot tell resources apart beyond the attributes
 *   they read, rows with equal read attributes share one decision (a namespace rule evaluates once
 *   per namespace, not once per version);
 * - a decision cache per class and row, dropped whenever the store's data changes.
 */
import {Authorizer, type Decision} from '../authz/authorizer.ts'
import {policyToJson, type CedarPolicyJson} from '../authz/cedar-engine.ts'
import type {PrincipalPart} from '../authz/entity-model.ts'
import type {AuthzConfig} from '../authz/policy-file.ts'
import {
  namesAction,
  principalScopeMayMatch,
  usedAsWholeValue,
  usesResourceIdentity,
} from '../authz/policy-analysis.ts'
import type {Principal} from '../auth/types.ts'
import type {Logger} from '../log/logger.ts'
import type {ServerEntry} from '../registry/types.ts'
import {serverEntity} from './server-entity.ts'

export type RegistryAction = 'list_servers' | 'get_server'

/** Changes to a managed source (docs/registry-publish.md), decided one request at a time. */
export type RegistryWriteAction = 'publish' | 'set_status'

export const ANONYMOUS_PRINCIPAL = 'anonymous'

/** One caller's view, built once per request. */
export interface RegistryViewer {
  /** Equal for callers the policy must answer alike (response-cache keys use it). */
  readonly classKey: string
  /** True when no permit policy can apply to this caller: every server is hidden. */
  readonly seesNothing: boolean
  /** Whether the caller may see this entry; `load` is called only when no cached decision exists. */
  allows(
    action: RegistryAction,
    registry: string,
    name: string,
    version: string,
    load: () => ServerEntry,
  ): boolean
}

export interface RegistryPolicyOptions {
  logger?: Logger | undefined
  /** The store's data version (see VersionedStore); decisions are dropped when it changes. */
  dataVersion?: (() => number) | undefined
  /** Cached decisions kept at most before the cache starts over. */
  maxDecisions?: number
}

/** The policies that can apply to one class of callers, ready to evaluate. */
interface Slice {
  authorizer: Authorizer
  /** Whether any permit is in the slice (else nothing can be allowed). */
  permits: boolean
  /** Whether decisions may depend on which server it is beyond the attributes read. */
  identity: boolean
  /** No policy of the slice uses `resource.meta` whole: unnamed fields are left out. */
  metaFieldsOnly: boolean
}

interface ClassState {
  slice: Slice | undefined
  /** Decisions by row (`action registry name version`) and, without identity, by attributes. */
  byRow: Map<string, boolean>
  byAttributes: Map<string, boolean>
}

const MAX_CLASSES = 1000
let generations = 0

export class RegistryPolicy {
  /** Different for every loaded policy, so caches of an older policy are never consulted. */
  readonly generation = ++generations
  readonly #config: AuthzConfig
  readonly #ids: string[]
  readonly #asts: CedarPolicyJson[]
  /** Classes and the principal half of cache keys come from the whole policy set. */
  readonly #all: Authorizer
  readonly #hierarchy: boolean
  readonly #operatorResources: boolean
  readonly #options: RegistryPolicyOptions
  readonly #maxDecisions: number
  readonly #slices = new Map<string, Slice | undefined>()
  readonly #writers = new Map<RegistryWriteAction, Authorizer | undefined>()
  #classes = new Map<string, ClassState>()
  #decisionCount = 0
  #version: number | undefined

  constructor(config: AuthzConfig, options: RegistryPolicyOptions = {}) {
    this.#config = config
    this.#ids = Object.keys(config.policies)
    this.#asts = this.#ids.map((id) => policyToJson(config.policies[id] as string))
    // The Authorizer's own cache is keyed by the whole Cedar request text; this class keys by the
    // caller class and the row instead, which is cheaper to build, so that cache stays off.
    this.#all = new Authorizer(config, {logger: options.logger, cacheSize: 0})
    this.#hierarchy = config.entities.some((e) => e.parents.length > 0)
    this.#operatorResources = config.entities.some((e) => {
      const type = (e.uid as {type: string}).type
      return type === 'Server' || type === 'Registry'
    })
    this.#options = options
    this.#maxDecisions = options.maxDecisions ?? 250_000
  }

  /**
   * One write decision, never cached: every forbid applies, and only permits whose action scope
   * names the action (see namesAction). No such permit → denied without calling the engine.
   */
  decideWrite(
    caller: Principal | undefined,
    action: RegistryWriteAction,
    registry: string,
    entry: ServerEntry,
  ): Decision {
    const authorizer = this.#writers.has(action)
      ? this.#writers.get(action)
      : this.#writerFor(action)
    if (!authorizer) return {allowed: false, policies: [], errored: [], cached: false}
    const subject = caller ? caller.subject : ANONYMOUS_PRINCIPAL
    const part = authorizer.principal(subject, caller ? caller.claims : {})
    const resource = serverEntity(entry, registry, authorizer.model)
    return authorizer.decideEntity(part, action, resource, {cache: false})
  }

  #writerFor(action: RegistryWriteAction): Authorizer | undefined {
    const ids = this.#ids.filter((id, i) => {
      const ast = this.#asts[i] as CedarPolicyJson
      return ast.effect === 'forbid' || namesAction(ast, action)
    })
    const permits = ids.some((id) => this.#asts[this.#ids.indexOf(id)]?.effect === 'permit')
    const authorizer = permits
      ? new Authorizer(
          {
            ...this.#config,
            policies: Object.fromEntries(
              ids.map((id) => [id, this.#config.policies[id] as string]),
            ),
          },
          {logger: this.#options.logger, cacheSize: 0},
        )
      : undefined
    this.#writers.set(action, authorizer)
    return authorizer
  }

  viewer(caller: Principal | undefined): RegistryViewer {
    const subject = caller ? caller.subject : ANONYMOUS_PRINCIPAL
    const claims = caller ? caller.claims : {}
    const whole = this.#all.principal(subject, claims)
    const classKey = this.#all.equivalenceKey(whole)
    const state = this.#classState(classKey, whole)
    const slice = state.slice
    if (!slice?.permits) {
      return {classKey, seesNothing: true, allows: () => false}
    }
    const part: PrincipalPart = slice.authorizer.principal(subject, claims)
    const model = slice.authorizer.model
    return {
      classKey,
      seesNothing: false,
      allows: (action, registry, name, version, load) => {
        const rowKey = `${action}\0${registry}\0${name}\0${version}`
        const hit = state.byRow.get(rowKey)
        if (hit !== undefined) return hit
        const resource = serverEntity(load(), registry, model, slice)
        let allowed: boolean | undefined
        const attrKey = slice.identity ? undefined : `${action}\0${JSON.stringify(resource.attrs)}`
        if (attrKey !== undefined) allowed = state.byAttributes.get(attrKey)
        if (allowed === undefined) {
          allowed = slice.authorizer.decideEntity(part, action, resource, {cache: false}).allowed
          if (attrKey !== undefined) this.#remember(state.byAttributes, attrKey, allowed)
        }
        this.#remember(state.byRow, rowKey, allowed)
        return allowed
      },
    }
  }

  #remember(map: Map<string, boolean>, key: string, value: boolean): void {
    if (this.#decisionCount >= this.#maxDecisions) return
    map.set(key, value)
    this.#decisionCount++
  }

  /**
   * The state of one class for the current data version. A request keeps the state it started
   * with: if the data changes meanwhile, what it learns lands in maps nobody reads again.
   */
  #classState(classKey: string, principal: PrincipalPart): ClassState {
    const version = this.#options.dataVersion?.()
    if (
      version !== this.#version ||
      this.#decisionCount >= this.#maxDecisions ||
      this.#classes.size >= MAX_CLASSES
    ) {
      this.#version = version
      this.#classes = new Map()
      this.#decisionCount = 0
    }
    let state = this.#classes.get(classKey)
    if (!state) {
      state = {slice: this.#sliceFor(principal), byRow: new Map(), byAttributes: new Map()}
      this.#classes.set(classKey, state)
    }
    return state
  }

  #sliceFor(principal: PrincipalPart): Slice | undefined {
    const uid = principal.uid
    const parents = principal.entity.parents as {type: string; id: string}[]
    const members: number[] = []
    this.#asts.forEach((ast, i) => {
      if (principalScopeMayMatch(ast, uid, parents, this.#hierarchy)) members.push(i)
    })
    const key = members.join(',')
    if (this.#slices.has(key)) return this.#slices.get(key)
    let slice: Slice | undefined
    if (members.length > 0) {
      const asts = members.map((i) => this.#asts[i] as CedarPolicyJson)
      const policies = Object.fromEntries(
        members.map((i) => [
          this.#ids[i] as string,
          this.#config.policies[this.#ids[i] as string] as string,
        ]),
      )
      slice = {
        authorizer: new Authorizer(
          {...this.#config, policies},
          {logger: this.#options.logger, cacheSize: 0},
        ),
        permits: asts.some((a) => a.effect === 'permit'),
        identity: usesResourceIdentity(asts) || this.#operatorResources,
        metaFieldsOnly: !usedAsWholeValue(asts, 'meta'),
      }
    }
    if (this.#slices.size >= MAX_CLASSES) this.#slices.clear()
    this.#slices.set(key, slice)
    return slice
  }
}
