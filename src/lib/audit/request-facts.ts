import type {IncomingMessage} from 'node:http'
import type {Outcome, RequestFacts} from './auditor.ts'
import type {DecisionFacts} from '../proxy/types.ts'
import type {EventMemo} from './mcp-events.ts'

/**
 * What the audit trail needs of one request, filled in as the pipeline learns it; with `parsed`
 * and `events` (EventMemo): its body read once, when an observer first asks.
 */
export type AuditFacts = RequestFacts &
  EventMemo & {
    started: number
    decision?: DecisionFacts | undefined
  }

// W3C trace context: version 00, a 32-hex trace id (not all zeros), a 16-hex parent id, flags.
const TRACEPARENT = /^00-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/

export function auditFacts(req: IncomingMessage): AuditFacts {
  const session = req.headers['mcp-session-id']
  const trace = TRACEPARENT.exec(String(req.headers.traceparent ?? ''))?.[1]
  return {
    httpMethod: (req.method ?? 'GET').toUpperCase(),
    body: undefined,
    principal: undefined,
    sessionId: typeof session === 'string' ? session : undefined,
    // Made when its first record is built (the auditor): the request path does not pay for it.
    requestId: undefined,
    traceId: trace && !/^0+$/.test(trace) ? trace : undefined,
    started: performance.now(),
    decision: undefined,
    parsed: undefined,
    events: undefined,
  }
}

/** Milliseconds since the request arrived, to a tenth. */
export function ms(facts: AuditFacts): number {
  return Math.round((performance.now() - facts.started) * 10) / 10
}

/**
 * What watches the proxy's requests (issue 35): the audit trail and the metrics. Called once per
 * request, after its answer (or its stream) ended, or when it was refused before forwarding.
 */
export interface RequestObserver {
  request(facts: AuditFacts, outcome: Outcome): void
  refused(facts: AuditFacts, status: number, reason: string, durationMs: number): void
  close?(): void | Promise<void>
}
