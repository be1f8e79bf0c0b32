import {randomUUID} from 'node:crypto'
import type {Principal} from '../auth/types.ts'
import type {WriteFacts} from '../registry-publish/publisher.ts'
import {ToolgateError} from '../errors.ts'
import type {Logger} from '../log/logger.ts'
import {AuditFile} from './file-sink.ts'
import {parseSyslogTarget, SyslogSink} from './syslog-sink.ts'
import type {OtlpLogSink} from './otlp-sink.ts'
import {mcpEventsOf, redactionPattern} from './mcp-events.ts'
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
  requestId: string
  traceId?: string | undefined
}

export interface Outcome {
  outcome: 'success' | 'failure' | 'denied'
  status: number
  durationMs: number
  decision?: {decision: 'allow' | 'deny'; policies?: string[]; reason?: string} | undefined
}

export class Auditor implements RequestObserver {
  private readonly file: AuditFile | undefined
  private readonly options: AuditOptions
  private readonly logger: Logger
  private readonly redact: RegExp
  dropped = 0

  constructor(options: AuditOptions, logger: Logger) {
    this.options = options
    this.logger = logger
    this.redact = redactionPattern(options.redactKeys)
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
    if (this.file) this.file.onError = (err) => this.failed(err)
  }

  private readonly syslog: SyslogSink | undefined
  private readonly otlp: OtlpLogSink | undefined

  /** The records of one answered request: one per message it carried. */
  request(facts: RequestFacts, outcome: Outcome): void {
    const events = mcpEventsOf(facts.httpMethod, facts.body, {
      include: this.options.includeArgs === true,
      redact: this.redact,
    })
    for (const e of events) {
      this.write({
        event: outcome.outcome === 'denied' ? 'authz_denied' : e.event,
        ...(outcome.outcome === 'denied' ? {mcpEvent: e.event} : {}),
        outcome: outcome.outcome,
        ...this.who(facts.principal),
        method: e.method,
        ...(e.name !== undefined ? {name: e.name} : {}),
        ...(e.args !== undefined ? {args: e.args} : {}),
        ...(outcome.decision ? {decision: outcome.decision} : {}),
        status: outcome.status,
        durationMs: outcome.durationMs,
        ...this.ids(facts, e.id),
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
    this.write({
      event: r.route === 'unauthorized' ? 'auth_failure' : w ? 'registry_publish' : 'registry_read',
      outcome: r.status < 400 ? 'success' : 'failure',
      ...this.who(r.principal),
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
    })
  }

  /** A request refused before anything was forwarded (authentication, Origin, limits). */
  refused(facts: RequestFacts, status: number, reason: string, durationMs: number): void {
    this.write({
      event: status === 401 ? 'auth_failure' : 'request_refused',
      outcome: 'failure',
      principal: null,
      reason,
      status,
      durationMs,
      ...this.ids(facts, undefined),
    })
  }

  /** Flushes and closes the sink; OTLP exports what is waiting first. */
  async close(): Promise<void> {
    this.file?.close()
    this.syslog?.close()
    await this.otlp?.close().catch(() => undefined)
  }

  private who(p: Principal | undefined) {
    if (!p) return {principal: null}
    const c = p.claims
    const str = (v: unknown) => (typeof v === 'string' ? v : undefined)
    const groups = Array.isArray(c.groups)
      ? c.groups.filter((g) => typeof g === 'string')
      : undefined
    return {
      principal: {
        issuer: str(c.iss) ?? p.provider,
        subject: p.subject,
        ...((str(c.client_id) ?? str(c.azp)) ? {clientId: str(c.client_id) ?? str(c.azp)} : {}),
        ...(groups?.length ? {groups} : {}),
      },
    }
  }

  private ids(facts: RequestFacts, id: string | number | undefined) {
    return {
      workload: this.options.workload,
      target: this.options.target,
      requestId: facts.requestId,
      ...(id !== undefined ? {jsonrpcId: id} : {}),
      ...(facts.sessionId ? {sessionId: facts.sessionId.slice(0, 200)} : {}),
      ...(facts.traceId ? {traceId: facts.traceId} : {}),
    }
  }

  private write(fields: Record<string, unknown>): void {
    const record = {time: new Date().toISOString(), ...fields}
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
