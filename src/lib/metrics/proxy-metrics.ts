import type {Outcome} from '../audit/auditor.ts'
import {mcpEventsOf} from '../audit/mcp-events.ts'
import type {AuditFacts, RequestObserver} from '../audit/request-facts.ts'
import {Counter, Gauge, Histogram, MetricsRegistry} from './prometheus.ts'

/**
 * The metrics of `proxy` and `run` (issue 35), served on their `--internal-address`: MCP messages
 * by event, method, tool, decision and answer status; their duration; refusals by kind. Label
 * values a client chooses (methods, tool names) are bounded: past a limit they count as `other`,
 * so a hostile client cannot grow the series without end.
 */
const MAX_TOOLS = 200
const NO_ARGS = {include: false, redact: /$^/}
const KNOWN_METHODS = new Set([
  'initialize',
  'ping',
  'tools/call',
  'tools/list',
  'resources/read',
  'resources/list',
  'resources/templates/list',
  'resources/subscribe',
  'resources/unsubscribe',
  'prompts/get',
  'prompts/list',
  'completion/complete',
  'logging/setLevel',
  'response',
  'GET',
  'DELETE',
  'unparsable',
])

export class ProxyMetrics implements RequestObserver {
  readonly registry = new MetricsRegistry()
  #pending: (AuditFacts | Outcome)[] = []
  #pendingBytes = 0
  #timer: NodeJS.Timeout | undefined
  constructor() {
    this.registry.onScrape(async () => this.#count())
  }
  private readonly messages = this.registry.register(
    new Counter('toolgate_mcp_messages_total', 'MCP messages that reached the proxy, by outcome.', [
      'event',
      'method',
      'tool',
      'decision',
      'code',
    ]),
  )
  private readonly duration = this.registry.register(
    new Histogram(
      'toolgate_mcp_request_duration_seconds',
      'Time from request to the end of its answer.',
      ['event'],
    ),
  )
  private readonly refusals = this.registry.register(
    new Counter(
      'toolgate_requests_refused_total',
      'Requests refused before they reached the server.',
      ['kind', 'code'],
    ),
  )
  private readonly tools = new Set<string>()
  readonly #readers = new Map<string, () => number | undefined>()
  readonly #egress = this.registry.register(
    new Counter(
      'toolgate_egress_decisions_total',
      "Connections the sandbox's egress proxy allowed or refused.",
      ['decision'],
    ),
  )

  /**
   * Gauges read at scrape time: `sessions` (MCP sessions the proxy or `run`'s bridge holds) and
   * `processes` (server processes `run` keeps). Each is registered once; a later call replaces
   * what it reads.
   */
  watch(what: 'sessions' | 'processes', read: () => number | undefined): void {
    const first = !this.#readers.has(what)
    this.#readers.set(what, read)
    if (!first) return
    const [name, help] =
      what === 'sessions'
        ? ['toolgate_sessions', 'MCP sessions open now.']
        : ['toolgate_server_processes', 'MCP server processes running now.']
    this.registry.register(
      new Gauge(name, help, [], (g) => {
        const v = this.#readers.get(what)?.()
        if (v !== undefined) g.set([], v)
      }),
    )
  }

  /** One decision of the sandbox's egress proxy (`run --sandbox`). */
  egress(decision: 'allow' | 'deny'): void {
    this.#egress.inc([decision])
  }

  /** The audit records a failing sink could not take (issue 35: counted, never silent). */
  countDropped(read: () => number): void {
    this.registry.register(
      new Gauge(
        'toolgate_audit_records_dropped_total',
        'Audit records that could not be written or sent.',
        [],
        (g) => g.set([], read()),
        'counter',
      ),
    )
  }

  /**
   * Notes an answered request; it is counted with the others of the next 20 ms, or before a
   * scrape, whichever comes first (as the audit trail does: a warm batch costs the request path
   * less than counting each on its own). The queue is bounded like the auditor's.
   */
  request(facts: AuditFacts, outcome: Outcome): void {
    this.#pending.push(facts, outcome)
    this.#pendingBytes += facts.body?.length ?? 0
    if (this.#pending.length >= 1024 || this.#pendingBytes >= 256 * 1024) this.#count()
    else this.#timer ??= setTimeout(() => this.#count(), 20).unref()
  }

  /** Counts what is pending (pairs of facts and outcome). */
  #count(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    const pending = this.#pending
    this.#pending = []
    this.#pendingBytes = 0
    for (let i = 0; i < pending.length; i += 2)
      this.#countOne(pending[i] as AuditFacts, pending[i + 1] as Outcome)
  }

  #countOne(facts: AuditFacts, outcome: Outcome): void {
    const decision = outcome.decision?.decision ?? 'none'
    const code = String(outcome.status)
    for (const e of mcpEventsOf(facts.httpMethod, facts.body, NO_ARGS, facts)) {
      const method = KNOWN_METHODS.has(e.method)
        ? e.method
        : e.method.startsWith('notifications/')
          ? 'notification'
          : 'other'
      this.messages.inc([
        outcome.outcome === 'denied' ? 'authz_denied' : e.event,
        method,
        this.tool(e.name, e.event),
        decision,
        code,
      ])
    }
    this.duration.observe(
      [outcome.outcome === 'denied' ? 'authz_denied' : 'forwarded'],
      outcome.durationMs / 1000,
    )
  }

  refused(_facts: AuditFacts, status: number, reason: string): void {
    const kind =
      status === 401
        ? 'auth_failure'
        : /session/.test(reason)
          ? 'session'
          : /body/.test(reason)
            ? 'body'
            : 'other'
    this.refusals.inc([kind, String(status)])
  }

  private tool(name: string | undefined, event: string): string {
    if (event !== 'mcp_tool_call' || name === undefined) return ''
    if (this.tools.has(name)) return name
    if (this.tools.size >= MAX_TOOLS) return 'other'
    this.tools.add(name)
    return name
  }
}
