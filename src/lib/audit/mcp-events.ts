/**
 * What one HTTP request to an MCP endpoint was, in audit terms (issue 35): one entry per JSON-RPC
 * message of the body (a batch gives several), with the event name, the method, and the tool,
 * resource or prompt it names. Arguments are kept only when asked, with secret-looking values
 * replaced.
 */
export type McpEventName =
  | 'mcp_initialize'
  | 'mcp_tool_call'
  | 'mcp_resource_read'
  | 'mcp_prompt_get'
  | 'mcp_list'
  | 'mcp_notification'
  | 'mcp_response'
  | 'mcp_request'
  | 'mcp_stream'
  | 'mcp_session_end'

export interface McpEvent {
  event: McpEventName
  method: string
  id?: string | number | undefined
  name?: string | undefined
  args?: unknown
}

const MAX_MESSAGES = 100

/** What one request's observers share of its body (kept on its AuditFacts). */
export interface EventMemo {
  parsed?: unknown
  events?: McpEvent[] | undefined
}

/**
 * The events of one request. `memo` is the request's own record (its AuditFacts): the audit trail
 * and the metrics both read the body; it is parsed once, and its events without arguments made
 * once, for both, and kept only as long as the request is. Events with arguments are made anew.
 */
export function mcpEventsOf(
  httpMethod: string,
  body: Buffer | undefined,
  args: {include: boolean; redact: RegExp},
  memo: EventMemo = {},
): McpEvent[] {
  if (args.include) return eventsOf(httpMethod, body, args, memo)
  return (memo.events ??= eventsOf(httpMethod, body, args, memo))
}

function eventsOf(
  httpMethod: string,
  body: Buffer | undefined,
  args: {include: boolean; redact: RegExp},
  memo: EventMemo,
): McpEvent[] {
  if (httpMethod === 'GET') return [{event: 'mcp_stream', method: 'GET'}]
  if (httpMethod === 'DELETE') return [{event: 'mcp_session_end', method: 'DELETE'}]
  if (memo.parsed === undefined) memo.parsed = messagesOf(body)
  const messages = memo.parsed
  if (messages === UNPARSABLE) return [{event: 'mcp_request', method: 'unparsable'}]
  return (messages as unknown[]).map((m) => eventOf(m, args))
}

const UNPARSABLE = Symbol('unparsable')

/** The body's messages, the first MAX_MESSAGES of a batch (only those are kept in the memo). */
function messagesOf(body: Buffer | undefined): unknown[] | typeof UNPARSABLE {
  let value: unknown
  try {
    value = JSON.parse(body?.toString('utf8') ?? '')
  } catch {
    return UNPARSABLE
  }
  return Array.isArray(value) ? value.slice(0, MAX_MESSAGES) : [value]
}

// Built without spreads or optional keys (absent ones are undefined): the auditor runs this for
// every proxied message.
function eventOf(message: unknown, args: {include: boolean; redact: RegExp}): McpEvent {
  const m = (message && typeof message === 'object' ? message : {}) as Record<string, unknown>
  const id = typeof m.id === 'string' || typeof m.id === 'number' ? m.id : undefined
  if (typeof m.method !== 'string') return event('mcp_response', 'response', id)
  const method = m.method.slice(0, 200)
  const params = (m.params && typeof m.params === 'object' ? m.params : {}) as Record<
    string,
    unknown
  >
  const withArgs = (v: unknown) =>
    args.include && v !== undefined ? redact(v, args.redact) : undefined
  if (method === 'initialize') return event('mcp_initialize', method, id)
  if (method === 'tools/call')
    return event('mcp_tool_call', method, id, params.name, withArgs(params.arguments))
  if (method === 'resources/read') return event('mcp_resource_read', method, id, params.uri)
  if (method === 'prompts/get')
    return event('mcp_prompt_get', method, id, params.name, withArgs(params.arguments))
  if (method.endsWith('/list')) return event('mcp_list', method, id)
  if (method.startsWith('notifications/')) return event('mcp_notification', method, undefined)
  return event('mcp_request', method, id)
}

function event(
  name: McpEventName,
  method: string,
  id: string | number | undefined,
  target?: unknown,
  args?: unknown,
): McpEvent {
  return {
    event: name,
    method,
    id,
    name: typeof target === 'string' ? target.slice(0, 500) : undefined,
    args,
  }
}

/** Keys whose values are taken for secrets: a name in `extra` or one that looks like one. */
export function redactionPattern(extra: string[] = []): RegExp {
  const words = [
    'pass',
    'secret',
    'token',
    'key',
    'auth',
    'credential',
    'cookie',
    'session',
    'private',
    'signature',
  ]
  const escaped = extra.map((k) => k.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
  return new RegExp(`(${[...words, ...escaped].join('|')})`, 'i')
}

const REDACTED = '[redacted]'

/** A copy with the values of secret-looking keys replaced, to a bounded depth. */
export function redact(value: unknown, pattern: RegExp, depth = 0): unknown {
  if (depth > 8) return REDACTED
  if (Array.isArray(value)) return value.slice(0, 100).map((v) => redact(v, pattern, depth + 1))
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [
        k,
        pattern.test(k) ? REDACTED : redact(v, pattern, depth + 1),
      ]),
    )
  if (typeof value === 'string' && value.length > 2_000) return value.slice(0, 2_000) + '…'
  return value
}
