/**
 * The Cedar entity model of contract §6: who asks (`Client::"<sub>"` with `claim_*` attributes and
 * `ToolgateGroup` parents), what for (`Action::"call_tool" | "get_prompt" | "read_resource"`) and
 * on what (`Tool::"<name>"`, `Prompt::"<name>"`, `Resource::"<uri>"` with `name`, `arg_*` and, for
 * tools, the server's own annotations). Context carries the same `claim_*` and `arg_*` values.
 * Entities from `entities_json` are merged in; on the same uid the request's attributes win and
 * parents are united, so operator-defined attributes (an owner, a label) stay visible.
 */
import type {CedarEntity, CedarEntityUid, CedarRequest, CedarValue} from './cedar-engine.ts'
import {argumentAttributes, claimAttributes, groupNames} from './claims.ts'
import {uidKey} from './entities-json.ts'

export type AuthzAction = 'call_tool' | 'get_prompt' | 'read_resource'
export type ResourceType = 'Tool' | 'Prompt' | 'Resource'

export const ACTION_RESOURCE: Record<AuthzAction, ResourceType> = {
  call_tool: 'Tool',
  get_prompt: 'Prompt',
  read_resource: 'Resource',
}

/** MCP tool annotations that policies may read (MCP "Tool annotations"); booleans only. */
export const ANNOTATION_NAMES = [
  'readOnlyHint',
  'destructiveHint',
  'idempotentHint',
  'openWorldHint',
] as const
export type ToolAnnotations = Partial<Record<(typeof ANNOTATION_NAMES)[number], boolean>>

export interface ResourceSpec {
  action: AuthzAction
  /** Tool or prompt name, or the resource URI verbatim. */
  id: string
  args?: Record<string, unknown> | undefined
  annotations?: ToolAnnotations | undefined
}

/** The per-caller half of a request, built once per HTTP request (a list filter reuses it). */
export interface PrincipalPart {
  uid: CedarEntityUid
  entity: CedarEntity
  claimContext: Record<string, CedarValue>
  /** Stable text of everything above, the principal half of the cache key. */
  key: string
}

export interface BuiltRequest {
  request: CedarRequest
  /** The whole Cedar request as text: the decision cache key. */
  key: string
  /** The same without the resource id, for policy sets whose answer cannot depend on it. */
  identityFreeKey: string
}

export interface EntityModelOptions {
  groupClaimName: string
  roleClaimName: string
  entities: CedarEntity[]
  /** Attribute names policies read; undefined keeps every attribute. */
  referenced?: Set<string> | undefined
  /** Attributes the front adds to a resource by its id (a gateway's `backend`, issue 37). */
  resourceAttributes?: ResourceAttributes | undefined
}

export type ResourceAttributes = (
  type: ResourceType,
  id: string,
) => Record<string, CedarValue> | undefined

export class EntityModel {
  readonly #groupClaim: string
  readonly #roleClaim: string
  readonly #base: CedarEntity[]
  readonly #baseByUid: Map<string, CedarEntity>
  readonly #keep: ((name: string) => boolean) | undefined
  readonly #resourceAttributes: ResourceAttributes | undefined

  constructor(options: EntityModelOptions) {
    this.#resourceAttributes = options.resourceAttributes
    this.#groupClaim = options.groupClaimName
    this.#roleClaim = options.roleClaimName
    this.#base = options.entities
    this.#baseByUid = new Map(options.entities.map((e) => [uidKey(e.uid as CedarEntityUid), e]))
    const referenced = options.referenced
    this.#keep = referenced ? (name) => referenced.has(name) : undefined
  }

  principal(subject: string, claims: Record<string, unknown>): PrincipalPart {
    const uid = {type: 'Client', id: subject}
    const attrs = claimAttributes(claims, this.#keep)
    const parents = groupNames(claims, this.#groupClaim, this.#roleClaim).map((g) => ({
      type: 'ToolgateGroup',
      id: g,
    }))
    return {
      uid,
      entity: {uid, attrs, parents},
      claimContext: attrs,
      key: JSON.stringify([subject, attrs, parents]),
    }
  }

  resourceUid(spec: ResourceSpec): CedarEntityUid {
    return {type: ACTION_RESOURCE[spec.action], id: spec.id}
  }

  /** Whether a policy reads attribute `name` (attributes no policy reads are left out of requests). */
  keeps(name: string): boolean {
    return !this.#keep || this.#keep(name)
  }

  build(principal: PrincipalPart, spec: ResourceSpec): BuiltRequest {
    const keep = this.#keep
    const uid = this.resourceUid(spec)
    const argAttrs = argumentAttributes(spec.args, keep)
    const attrs: Record<string, CedarValue> = {...argAttrs}
    if (!keep || keep('name')) attrs.name = spec.id
    const added = this.#resourceAttributes?.(uid.type as ResourceType, spec.id)
    for (const [k, v] of Object.entries(added ?? {})) if (!keep || keep(k)) attrs[k] = v
    if (spec.action === 'call_tool' && spec.annotations) {
      for (const n of ANNOTATION_NAMES) {
        const v = spec.annotations[n]
        if (typeof v === 'boolean' && (!keep || keep(n))) attrs[n] = v
      }
    }
    return this.buildFor(principal, spec.action, {uid, attrs, parents: []}, argAttrs)
  }

  /**
   * A request for any action on any resource entity (the registry's `Server` entities use this);
   * `extraContext` joins the principal's claims in the context.
   */
  buildFor(
    principal: PrincipalPart,
    actionId: string,
    resource: CedarEntity,
    extraContext: Record<string, CedarValue> = {},
  ): BuiltRequest {
    const uid = resource.uid as CedarEntityUid
    const request: CedarRequest = {
      principal: principal.uid,
      action: {type: 'Action', id: actionId},
      resource: uid,
      context: {...principal.claimContext, ...extraContext},
      entities: this.#entities(principal.entity, resource),
    }
    const attrText = JSON.stringify(resource.attrs)
    const parents = resource.parents.length === 0 ? '' : JSON.stringify(resource.parents)
    return {
      request,
      key: `${principal.key}\n${actionId}\n${uid.type}\n${JSON.stringify(uid.id)}\n${attrText}${parents}`,
      identityFreeKey: `${principal.key}\n${actionId}\n${uid.type}\n*\n${attrText}${parents}`,
    }
  }

  #entities(principal: CedarEntity, resource: CedarEntity): CedarEntity[] {
    if (this.#base.length === 0) return [principal, resource]
    const pKey = uidKey(principal.uid as CedarEntityUid)
    const rKey = uidKey(resource.uid as CedarEntityUid)
    const pBase = this.#baseByUid.get(pKey)
    const rBase = this.#baseByUid.get(rKey)
    if (!pBase && !rBase) return [...this.#base, principal, resource]
    const out = this.#base.filter((e) => e !== pBase && e !== rBase)
    out.push(pBase ? merge(pBase, principal) : principal, rBase ? merge(rBase, resource) : resource)
    return out
  }
}

function merge(base: CedarEntity, request: CedarEntity): CedarEntity {
  const parents = [...base.parents]
  const seen = new Set(parents.map((p) => uidKey(p as CedarEntityUid)))
  for (const p of request.parents) if (!seen.has(uidKey(p as CedarEntityUid))) parents.push(p)
  const merged: CedarEntity = {uid: request.uid, attrs: {...base.attrs, ...request.attrs}, parents}
  if (base.tags) merged.tags = base.tags
  return merged
}
