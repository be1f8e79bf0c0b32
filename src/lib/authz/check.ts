/**
 * `toolgate authz check`: one MCP request judged exactly as the proxy judges it — the same plan
 * (request-plan.ts), the same Authorizer (policy subsets, prefilter, "any error denies"), the same
 * entity model and list filter — with what the proxy keeps to itself: the Cedar request, the
 * deciding policies by id and `@id` annotation, and the engine's messages for policies that failed.
 */
import {ToolgateError} from '../errors.ts'
import {isRecord} from '../mcp/json-rpc.ts'
import {annotationsOf} from './annotation-cache.ts'
import {Authorizer} from './authorizer.ts'
import {authorize, policyToJson, preparsePolicySet, type CedarRequest} from './cedar-engine.ts'
import {ANNOTATION_NAMES, type ResourceAttributes, type ToolAnnotations} from './entity-model.ts'
import {filterListResult, MalformedListError} from './list-filter.ts'
import type {ListKind} from './method-table.ts'
import type {AuthzConfig} from './policy-file.ts'
import {planRequest} from './request-plan.ts'

export interface PolicyRef {
  /** `policy<N>`: N is the index in `cedar.policies` (what the proxy logs). */
  id: string
  /** The policy's `@id("…")` annotation, when it has one. */
  name: string | null
  effect: 'permit' | 'forbid'
}

export interface AuthzCheckResult {
  method: string
  /** What the method table does with the method. */
  plan: 'allow' | 'deny' | 'list' | 'decide'
  decision: 'allow' | 'deny'
  /** One line saying why. */
  reason: string
  /** Policies that determined the decision (erroring ones when an error denied). */
  policies: PolicyRef[]
  errors: Array<PolicyRef & {message: string}>
  annotations: ToolAnnotations | null
  request: CedarRequest | null
  list: {
    kind: ListKind
    total: number
    kept: string[]
    removed: string[]
  } | null
}

export interface AuthzCheckInput {
  config: AuthzConfig
  subject: string
  claims: Record<string, unknown>
  method: string
  params: unknown
  /** Annotations as given (`--annotations`); otherwise `fetchAnnotations` asks the server. */
  annotations?: ToolAnnotations | undefined
  fetchAnnotations?: ((tool: string) => Promise<ToolAnnotations | undefined>) | undefined
  /** The list result to filter (`tools/list`…): a JSON-RPC response or its `result`. */
  listResult?: ((kind: ListKind) => Promise<unknown>) | undefined
  /** A gateway's `backend` attribute (issue 37), as the gateway's front adds it. */
  resourceAttributes?: ResourceAttributes | undefined
}

let checkSets = 0

export async function checkRequest(input: AuthzCheckInput): Promise<AuthzCheckResult> {
  const r = await decideRequest(input)
  // One key order for every result, so `--json` reads the same whatever the method.
  return {
    method: r.method,
    plan: r.plan,
    decision: r.decision,
    reason: r.reason,
    policies: r.policies,
    errors: r.errors,
    annotations: r.annotations,
    request: r.request,
    list: r.list,
  }
}

async function decideRequest(input: AuthzCheckInput): Promise<AuthzCheckResult> {
  const authorizer = new Authorizer(input.config, {
    cacheSize: 0,
    resourceAttributes: input.resourceAttributes,
  })
  const refs = policyRefs(input.config)
  const ref = (id: string): PolicyRef => refs.get(id) ?? {id, name: null, effect: 'permit'}
  const base = {
    method: input.method,
    policies: [] as PolicyRef[],
    errors: [] as AuthzCheckResult['errors'],
    annotations: null,
    request: null,
    list: null,
  }
  const plan = planRequest(input.method, input.params)
  if (plan.kind === 'allow')
    return {
      ...base,
      plan: 'allow',
      decision: 'allow',
      reason: 'always allowed (contract §6 method table)',
    }
  if (plan.kind === 'deny') return {...base, plan: 'deny', decision: 'deny', reason: plan.reason}
  const principal = authorizer.principal(input.subject, input.claims)
  if (plan.kind === 'list') {
    if (!input.listResult)
      throw new ToolgateError(
        'ERR_USAGE',
        `${input.method} is allowed and its result filtered: give the list with --list-response <file> or --target-uri`,
      )
    const raw = await input.listResult(plan.list)
    const result = isRecord(raw) && isRecord(raw.result) ? raw.result : raw
    let outcome
    try {
      outcome = filterListResult(authorizer, principal, plan.list, result)
    } catch (err) {
      if (err instanceof MalformedListError)
        throw new ToolgateError('ERR_USAGE', `list response: ${err.message}`)
      throw err
    }
    const items = (result as Record<string, unknown[]>)[plan.list] as Array<Record<string, unknown>>
    const kept = outcome.result[plan.list] as Array<Record<string, unknown>>
    const label = (i: Record<string, unknown>) => String(plan.list === 'resources' ? i.uri : i.name)
    return {
      ...base,
      plan: 'list',
      decision: 'allow',
      reason: `allowed; the caller sees ${outcome.kept} of ${outcome.total} ${plan.list}`,
      list: {
        kind: plan.list,
        total: outcome.total,
        kept: kept.map(label),
        removed: items.filter((i) => !kept.includes(i)).map(label),
      },
    }
  }
  let annotations = input.annotations
  if (plan.spec.action === 'call_tool' && annotations === undefined && input.fetchAnnotations)
    annotations = await input.fetchAnnotations(plan.spec.id)
  const spec = {...plan.spec, annotations}
  const decision = authorizer.decide(principal, spec, false)
  const request = authorizer.model.build(principal, spec).request
  const messages = errorMessages(input.config, request)
  const errors = decision.errored.map((id) => ({
    ...ref(id),
    message: messages.get(id) ?? 'evaluation error',
  }))
  const policies = decision.policies.map(ref)
  const reason = decision.allowed
    ? `allowed by ${names(policies)}`
    : errors.length > 0
      ? `denied: ${names(errors)} failed to evaluate (any evaluation error denies)`
      : policies.length > 0
        ? `denied by ${names(policies)}`
        : 'denied: no permit applies (default deny)'
  return {
    ...base,
    plan: 'decide',
    decision: decision.allowed ? 'allow' : 'deny',
    reason,
    policies,
    errors,
    annotations: spec.action === 'call_tool' ? (annotations ?? {}) : null,
    request,
  }
}

const names = (refs: PolicyRef[]) =>
  refs.map((r) => (r.name ? `${r.id} (@id "${r.name}")` : r.id)).join(', ')

export function policyRefs(config: AuthzConfig): Map<string, PolicyRef> {
  const out = new Map<string, PolicyRef>()
  for (const [id, text] of Object.entries(config.policies)) {
    const ast = policyToJson(text) as {
      effect: 'permit' | 'forbid'
      annotations?: Record<string, string | null>
    }
    const name = ast.annotations?.id
    out.set(id, {id, name: typeof name === 'string' ? name : null, effect: ast.effect})
  }
  return out
}

/**
 * The engine's messages for failing policies. The decision itself comes from the Authorizer; this
 * second evaluation of the same request against the whole set only recovers the text, which the
 * Authorizer leaves out of its logs (a message may quote a claim value).
 */
function errorMessages(config: AuthzConfig, request: CedarRequest): Map<string, string> {
  const id = `toolgate-authz-check-${++checkSets}`
  if (preparsePolicySet(id, config.policies) !== undefined) return new Map()
  const answer = authorize(id, request)
  return new Map(answer.errors.map((e) => [e.policyId, e.message]))
}

/** `--annotations '{"readOnlyHint":true}'`: only the four MCP hints, booleans only. */
export function parseAnnotations(text: string): ToolAnnotations {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw new ToolgateError('ERR_USAGE', `--annotations: not JSON: ${(err as Error).message}`)
  }
  if (!isRecord(value)) throw new ToolgateError('ERR_USAGE', '--annotations: must be a JSON object')
  for (const [k, v] of Object.entries(value)) {
    if (!(ANNOTATION_NAMES as readonly string[]).includes(k))
      throw new ToolgateError(
        'ERR_USAGE',
        `--annotations: unknown annotation "${k}" (known: ${ANNOTATION_NAMES.join(', ')})`,
      )
    if (typeof v !== 'boolean')
      throw new ToolgateError('ERR_USAGE', `--annotations: ${k} must be true or false`)
  }
  return annotationsOf({annotations: value})
}
