/**
 * The method table of contract §6: which MCP methods pass, which are decided by Cedar, which are
 * allowed with their results filtered, and which are denied (everything else, including
 * `sampling/createMessage`, `elicitation/create` and `tasks/*` sent by a client: those are
 * server-to-client requests, a client has no business sending them to the server).
 */
import type {AuthzAction} from './entity-model.ts'

export type ListKind = 'tools' | 'prompts' | 'resources'

export type MethodRule =
  | {rule: 'allow'}
  | {rule: 'decide'; action: AuthzAction; idParam: 'name' | 'uri'}
  | {rule: 'list'; kind: ListKind}
  | {rule: 'deny'}

const ALWAYS_ALLOWED = new Set([
  'initialize',
  'ping',
  'roots/list',
  'logging/setLevel',
  'completion/complete',
  // Templates name no concrete resource; reading one is decided on resources/read.
  'resources/templates/list',
  // Newer protocol revisions.
  'server/discover',
  'subscriptions/listen',
])

const DECIDED: Record<string, MethodRule> = {
  'tools/call': {rule: 'decide', action: 'call_tool', idParam: 'name'},
  'prompts/get': {rule: 'decide', action: 'get_prompt', idParam: 'name'},
  'resources/read': {rule: 'decide', action: 'read_resource', idParam: 'uri'},
  'resources/subscribe': {rule: 'decide', action: 'read_resource', idParam: 'uri'},
  'resources/unsubscribe': {rule: 'decide', action: 'read_resource', idParam: 'uri'},
  'tools/list': {rule: 'list', kind: 'tools'},
  'prompts/list': {rule: 'list', kind: 'prompts'},
  'resources/list': {rule: 'list', kind: 'resources'},
}

export function methodRule(method: string): MethodRule {
  if (ALWAYS_ALLOWED.has(method) || method.startsWith('notifications/')) return {rule: 'allow'}
  return Object.hasOwn(DECIDED, method) ? (DECIDED[method] as MethodRule) : {rule: 'deny'}
}
