/**
 * What the authorization step does with one JSON-RPC request, before any caller is looked at:
 * pass it (always-allowed methods), deny it (unknown methods, malformed params), filter its list
 * result, or decide it with Cedar on a resource. The proxy's interceptor and `toolgate authz
 * check` both start here, so the command judges a call exactly as the proxy does.
 */
import {isRecord} from '../mcp/json-rpc.ts'
import type {ResourceSpec} from './entity-model.ts'
import {methodRule, type ListKind} from './method-table.ts'

export type RequestPlan =
  | {kind: 'allow'}
  | {
      kind: 'deny'
      reason: 'method not allowed' | `invalid params.${'name' | 'uri'} or params.arguments`
    }
  | {kind: 'list'; list: ListKind}
  /** `spec` lacks annotations: for a tool they come from the server's own tools/list. */
  | {kind: 'decide'; spec: ResourceSpec}

export function planRequest(method: string, params: unknown): RequestPlan {
  const rule = methodRule(method)
  if (rule.rule === 'allow') return {kind: 'allow'}
  if (rule.rule === 'deny') return {kind: 'deny', reason: 'method not allowed'}
  if (rule.rule === 'list') return {kind: 'list', list: rule.kind}
  const p = isRecord(params) ? params : {}
  const target = p[rule.idParam]
  const args = p.arguments
  if (typeof target !== 'string' || (args !== undefined && !isRecord(args)))
    return {kind: 'deny', reason: `invalid params.${rule.idParam} or params.arguments`}
  return {
    kind: 'decide',
    spec: {action: rule.action, id: target, args: args as Record<string, unknown> | undefined},
  }
}
