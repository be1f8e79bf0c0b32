import {randomUUID} from 'node:crypto'
import type {Principal} from '../auth/types.ts'
import type {WriteFacts} from '../registry-publish/publisher.ts'
import {ToolgateError} from '../errors.ts'
import type {Logger} from '../log/logger.ts'
import {AuditFile, FLUSH_MS} from './file-sink.ts'
import {parseSyslogTarget, SyslogSink} from './syslog-sink.ts'
import type {OtlpLogSink} from './otlp-sink.ts'
import {mcpEventsOf, redactionPattern, type EventMemo} from './mcp-events.ts'
import type {RequestObserver} from './request-facts.ts'

/**
 * The audit trail of `proxy` and `run` (issue 35, docs/audit.md): one record per MCP message and
 * one per refusal, to a hash-chained file (`--audit-log FILE`) or to stdout (`--audit-log -`).
 * Writing is synchronous and bounded (a line per message); a sink that fails does not stop or slow
 * traffic: the record is counted as dropped and the first failure of each run is logged.
 */
/** `--audit-log otlp`: OpenTelemetry log records to the OTLP collector (otlp-sink.ts). */
export const OTLP = 'otlp'
export const NO_COLLECTOR =
  '--audit-log otlp: no collector; pass --otel-endpoint URL or set OTEL_EXPORTER_OTLP_ENDPOINT'

/** Whether `--audit-log otlp` has somewhere to send to (checked before anything starts). */
export function otlpLogsConfigured(endpoint: string | undefined, env: NodeJS.ProcessEnv): boolean {
  return Boolean(
    endpoint || env.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT,
  )
}

/** The OTLP sink when `log` asks for it (loading the SDK only then); undefined otherwise. */
export async function openOtlpSink(
  log: string,
  endpoint: string | undefined,
  env: NodeJS.ProcessEnv,
  workload: string,
): Promise<OtlpLogSink | undefined> {
  if (log !== OTLP) return undefined
  if (!otlpLogsConfigured(endpoint, env)) throw new ToolgateError('ERR_USAGE', NO_COLLECTOR)
  const {OtlpLogSink} = await import('./otlp-sink.ts')
  return new OtlpLogSink(endpoint, env, `toolgate-${workload}`)
}

export interface AuditOptions {
  /** A file path, `-` for stdout, a syslog receiver (udp://, tcp://, unix:), or `otlp`. */
  log: string
  /** `otlp`: the sink, made by the caller (openOtlpSink) so the SDK loads only when used. */
  otlp?: OtlpLogSink | undefined
  includeArgs?: boolean
  /** More key names whose values are redacted from arguments. */
  redactKeys?: string[]
  /** The workload or proxy name, and where it forwards to. */
  workload: string
  target: string
}

export interface RequestFacts {
  httpMethod: string
  body: Buffer | undefined
  principal: Principal | undefined
  sessionId: string | undefined
  /** Ties the records of one request together; made by the auditor when not given. */
  requestId: string | undefined
  traceId?: string | undefined
}

export interface Outcome {
  outcome: 'success' | 'failure' | 'denied'
  status: number
  durationMs: number
  decision?: {decision: 'allow' | 'deny'; policies?: string[]; reason?: string} | undefined
}

// Every exit but SIGKILL writes what is queued: the drain is synchronous, so it runs in 'exit'.
const open = new Set<Auditor>()
process.once('exit', () => {
  for (const auditor of open) auditor.flushNow()
})

/** A request still to be turned into records, or a record ready to be written. */
type Queued =
  | {facts: RequestFacts & EventMemo; outcome: Outcome; at: number; record?: undefined}
  | {record: Record<string, unknown>}

/** Past this many queued, or bodies this large, the queue is drained at once (memory bounds). */
const MAX_QUEUED = 512
// Bodies, not requests, bound a batch's work: 256 KiB of JSON is a few tens of milliseconds of
// building and sealing, however many messages they hold (a batch of 512 requests × 100 messages
// would otherwise stall the event loop for most of a second).
const MAX_QUEUED_BYTES = 256 * 1024

/** A record's first fields: when (`at`, epoch milliseconds), and what happened. */
function record(event: string, at: number): Record<string, unknown> {
  return {time: isoTime(at), event}
}

let isoSecond = NaN
let isoPrefix = ''

/**
 * `new Date(ms).toISOString()`, with the part up to the second made once a second: a batch of
 * records shares it, and formatting a date was a tenth of what a record cost to build.
 */
export function isoTime(at: number): string {
  const ms = Math.floor(at)
  const second = Math.floor(ms / 1000)
  if (second !== isoSecond) {
    isoSecond = second
    isoPrefix = new Date(second * 1000).toISOString().slice(0, -4) // up to the '.'
  }
  const milli = ms - second * 1000
  return `${isoPrefix}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`
}

export class Auditor implements RequestObserver {
  private readonly file: AuditFile | undefined
  private readonly options: AuditOptions
  private readonly logger: Logger
  private readonly args: {include: boolean; redact: RegExp}
  private queue: Queued[] = []
  /** The request bodies the queue holds on to (their messages are read when it is drained). */
  private queuedBytes = 0
  private timer: NodeJS.Timeout | undefined
  dropped = 0

  constructor(options: AuditOptions, logger: Logger) {
    this.options = options
    this.logger = logger
    this.args = {
      include: options.includeArgs === true,
      redact: redactionPattern(options.redactKeys),
    }
    const syslog = parseSyslogTarget(options.log)
    if (syslog) {
      this.syslog = new SyslogSink(syslog, `toolgate-${options.workload}`)
      this.syslog.onDrop = (err) => this.failed(err)
    }
    if (options.log === OTLP) {
      if (!options.otlp) throw new Error('--audit-log otlp: the OTLP sink was not opened')
      this.otlp = options.otlp
      this.otlp.onDrop = (err) => this.failed(err)
    }
    this.file = options.log === '-' || syslog || this.otlp ? undefined : new AuditFile(options.log)
    if (this.file) {
      this.file.onError = (err) => this.failed(err)
      this.file.onRotateError = (err) =>
        logger.warn('audit log not rotated; records go on to the same file', {error: err.message})
    }
    open.add(this)
  }

  private readonly syslog: SyslogSink | undefined
  private readonly otlp: OtlpLogSink | undefined

  /**
   * The records of one answered request: one per message it carried. Only noted now (its time
   * taken); they are built, sealed and written with the others of the next FLUSH_MS in one go,
   * warm, with one write: built one by one on each request's own path, with a write each, they
   * cost the proxy +39% CPU per request; batched, audit and metrics together about +9%
   * (bench/audit.bench.ts).
   */
  request(facts: RequestFacts & EventMemo, outcome: Outcome): void {
    this.queuedBytes += facts.body?.length ?? 0
    this.note({facts, outcome, at: Date.now()})
  }

  /**
   * Builds a noted request's records (`drain`): one per message. Each is one object literal with
   * every field in place (absent ones undefined, which JSON leaves out): one shape for all, which
   * JSON.stringify serialises a third faster than a record grown field by field.
   */
  private build(facts: RequestFacts & EventMemo, outcome: Outcome, at: number): void {
    const denied = outcome.outcome === 'denied'
    const principal = this.who(facts.principal)
    const time = isoTime(at)
    const requestId = (facts.requestId ??= randomUUID())
    for (const e of mcpEventsOf(facts.httpMethod, facts.body, this.args, facts)) {
      this.write({
        time,
        event: denied ? 'authz_denied' : e.event,
        mcpEvent: denied ? e.event : undefined,
        outcome: outcome.outcome,
        principal,
        method: e.method,
        name: e.name,
        args: e.args,
        decision: outcome.decision,
        status: outcome.status,
        durationMs: outcome.durationMs,
        workload: this.options.workload,
        target: this.options.target,
        requestId,
        jsonrpcId: e.id,
        sessionId: facts.sessionId ? facts.sessionId.slice(0, 200) : undefined,
        traceId: facts.traceId || undefined,
      })
    }
  }

  /** `serve`: a registry read (`registry_read`) or a refused token (`auth_failure`). */
  registry(r: {
    principal: Principal | undefined
    route: string
    path: string
    status: number
    durationMs: number
    /** Set for publish and status changes: what was changed and the policy's decision. */
    write?: WriteFacts
  }): void {
    const w = r.write
    const fields = {
      ...record(
        r.route === 'unauthorized' ? 'auth_failure' : w ? 'registry_publish' : 'registry_read',
        Date.now(),
      ),
      outcome: r.status < 400 ? 'success' : 'failure',
      principal: this.who(r.principal),
      route: r.route,
      path: r.path.slice(0, 500),
      ...(w
        ? {
            action: w.action,
            server: w.name?.slice(0, 200) ?? null,
            version: w.version?.slice(0, 255) ?? null,
            ...(w.status ? {newStatus: w.status} : {}),
            decision: w.decision ? (w.decision.allowed ? 'allow' : 'deny') : null,
            policies: w.decision?.policies ?? [],
          }
        : {}),
      status: r.status,
      durationMs: r.durationMs,
      workload: this.options.workload,
      requestId: randomUUID(),
    }
    this.note({record: fields})
  }

  /** A request refused before anything was forwarded (authentication, Origin, limits). */
  refused(facts: RequestFacts, status: number, reason: string, durationMs: number): void {
    const r = record(status === 401 ? 'auth_failure' : 'request_refused', Date.now())
    r.outcome = 'failure'
    r.principal = null
    r.reason = reason
    r.status = status
    r.durationMs = durationMs
    this.note({record: this.ids(r, facts)})
  }

  /**
   * Queues a record, or a request whose records are still to be built, in the order they
   * happened (the chain's order). A bounded queue: past MAX_QUEUED it is drained at once.
   */
  private note(item: Queued): void {
    this.queue.push(item)
    if (this.queue.length >= MAX_QUEUED || this.queuedBytes >= MAX_QUEUED_BYTES) this.drain()
    else this.timer ??= setTimeout(() => this.drain(), FLUSH_MS)
  }

  /** Writes everything queued now (process exit). */
  flushNow(): void {
    this.drain()
  }

  /** Builds and hands to the sink everything queued, then writes the file's batch. */
  private drain(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    const queue = this.queue
    this.queue = []
    this.queuedBytes = 0
    for (const item of queue) {
      try {
        if (item.record) this.write(item.record)
        else this.build(item.facts, item.outcome, item.at)
      } catch (err) {
        this.failed(err as Error)
      }
    }
    this.file?.flush()
  }

  /** Flushes and closes the sink; OTLP exports what is waiting first. */
  async close(): Promise<void> {
    open.delete(this)
    this.drain()
    this.file?.close()
    this.syslog?.close()
    await this.otlp?.close().catch(() => undefined)
  }

  private who(p: Principal | undefined): Record<string, unknown> | null {
    if (!p) return null
    const c = p.claims
    const str = (v: unknown) => (typeof v === 'string' ? v : undefined)
    const who: Record<string, unknown> = {issuer: str(c.iss) ?? p.provider, subject: p.subject}
    const clientId = str(c.client_id) ?? str(c.azp)
    if (clientId) who.clientId = clientId
    const groups = Array.isArray(c.groups) ? c.groups.filter((g) => typeof g === 'string') : []
    if (groups.length) who.groups = groups
    return who
  }

  /** Adds where the request went and the ids that tie its records together. */
  private ids(r: Record<string, unknown>, facts: RequestFacts) {
    r.workload = this.options.workload
    r.target = this.options.target
    r.requestId = facts.requestId ??= randomUUID()
    if (facts.sessionId) r.sessionId = facts.sessionId.slice(0, 200)
    if (facts.traceId) r.traceId = facts.traceId
    return r
  }

  /** Hands a fresh record to the sink, which may take it over (the file sink seals it in place). */
  private write(record: Record<string, unknown>): void {
    try {
      if (this.file) this.file.write(record)
      else if (this.syslog) this.syslog.write(record)
      else if (this.otlp) this.otlp.write(record)
      else process.stdout.write(JSON.stringify(record) + '\n')
    } catch (err) {
      this.failed(err as Error)
    }
  }

  private failed(err: Error): void {
    if (this.dropped++ === 0)
      this.logger.error('audit record not written (counted as dropped from now on)', {
        error: err.message,
      })
  }
}
