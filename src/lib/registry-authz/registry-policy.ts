/**
 * Cedar decisions for registry reads (docs/registry-authz.md): who may see which servers.
 * Principal `Client::"<sub>"` exactly as the proxy builds it (claims as `claim_*`, groups and roles
 * as `ToolgateGroup` parents), or `Client::"anonymous"` with no claims for a caller without a token
 * (anonymous mode, public paths); actions `Action::"list_servers"` (each item of a list) and
 * `Action::"get_server"` (the versions routes); resource `Server::"<name>"` (server-entity.ts).
 *
 * Decisions are cached per (equivalence class of callers, action, registry, name, version) and the
 * cache is dropped whenever the store's data changes: a registry holds up to ~10^5 versions and a
 * caller who sees 10% of them makes a page cost ten engine calls per item shown, once.
 */
import {Authorizer} from '../authz/authorizer.ts'
import type {PrincipalPart} from '../authz/entity-model.ts'
import type {AuthzConfig} from '../authz/policy-file.ts'
import type {Principal} from '../auth/types.ts'
import type {Logger} from '../log/logger.ts'
import type {ServerEntry} from '../registry/types.ts'
import {serverEntity} from './server-entity.ts'

export type RegistryAction = 'list_servers' | 'get_server'

export const ANONYMOUS_PRINCIPAL = 'anonymous'

/** One caller's view, built once per request. */
export interface RegistryViewer {
  /** Equal for callers the policy must answer alike (response-cache keys use it). */
  readonly classKey: string
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

let generations = 0

export class RegistryPolicy {
  /** Different for every loaded policy, so caches of an older policy are never consulted. */
  readonly generation = ++generations
  readonly #authorizer: Authorizer
  readonly #dataVersion: (() => number) | undefined
  readonly #maxDecisions: number
  #decisions = new Map<string, Map<string, boolean>>()
  #decisionCount = 0
  #version: number | undefined

  constructor(config: AuthzConfig, options: RegistryPolicyOptions = {}) {
    // The Authorizer's own cache is keyed by the whole Cedar request text; this class keys by the
    // caller class and the entry instead, which is cheaper to build, so that cache stays off.
    this.#authorizer = new Authorizer(config, {logger: options.logger, cacheSize: 0})
    this.#dataVersion = options.dataVersion
    this.#maxDecisions = options.maxDecisions ?? 250_000
  }

  viewer(caller: Principal | undefined): RegistryViewer {
    const part: PrincipalPart = caller
      ? this.#authorizer.principal(caller.subject, caller.claims)
      : this.#authorizer.principal(ANONYMOUS_PRINCIPAL, {})
    const classKey = this.#authorizer.equivalenceKey(part)
    const decisions = this.#decisionsFor(classKey)
    const model = this.#authorizer.model
    return {
      classKey,
      allows: (action, registry, name, version, load) => {
        const key = `${action}\0${registry}\0${name}\0${version}`
        const hit = decisions.get(key)
        if (hit !== undefined) return hit
        const resource = serverEntity(load(), registry, model)
        const allowed = this.#authorizer.decideEntity(part, action, resource, {
          cache: false,
        }).allowed
        if (this.#decisionCount < this.#maxDecisions) {
          decisions.set(key, allowed)
          this.#decisionCount++
        }
        return allowed
      },
    }
  }

  /**
   * The decision map of one caller class for the current data version. A request keeps the map it
   * started with: if the data changes meanwhile, what it learns lands in a map nobody reads again.
   */
  #decisionsFor(classKey: string): Map<string, boolean> {
    const version = this.#dataVersion?.()
    if (version !== this.#version || this.#decisionCount >= this.#maxDecisions) {
      this.#version = version
      this.#decisions = new Map()
      this.#decisionCount = 0
    }
    let map = this.#decisions.get(classKey)
    if (!map) {
      map = new Map()
      this.#decisions.set(classKey, map)
    }
    return map
  }
}
