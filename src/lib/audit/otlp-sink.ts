import {SeverityNumber} from '@opentelemetry/api'
import {ExportResultCode} from '@opentelemetry/core'
import {OTLPLogExporter} from '@opentelemetry/exporter-logs-otlp-http'
import {resourceFromAttributes} from '@opentelemetry/resources'
import {
  BatchLogRecordProcessor,
  LoggerProvider,
  type LogRecordExporter,
  type ReadableLogRecord,
} from '@opentelemetry/sdk-logs'
import {versionInfo} from '../version.ts'

/**
 * `--audit-log otlp`: audit records as OpenTelemetry log records, through the official SDK's
 * OTLP/HTTP exporter, to `--otel-endpoint` or `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT` /
 * `OTEL_EXPORTER_OTLP_ENDPOINT`. The record's event is the body; its fields are attributes
 * (nested values as JSON text). Batched in the background and bounded: past MAX_WAITING records
 * not yet exported, new ones are dropped — counted, as are records a failed export loses — and
 * traffic never waits for the collector.
 */
const MAX_WAITING = 4096

export class OtlpLogSink {
  private readonly provider: LoggerProvider
  private readonly logger: ReturnType<LoggerProvider['getLogger']>
  private waiting = 0
  /** Called once per record lost (queue full, or an export that failed). */
  onDrop: (err: Error) => void = () => undefined

  constructor(endpoint: string | undefined, env: NodeJS.ProcessEnv, name: string) {
    // The flag names the collector's base URL, as OTEL_EXPORTER_OTLP_ENDPOINT does.
    const url = endpoint ? `${endpoint.replace(/\/+$/, '')}/v1/logs` : undefined
    const exporter = this.counting(new OTLPLogExporter(url ? {url} : {}))
    this.provider = new LoggerProvider({
      resource: resourceFromAttributes({
        'service.name': env.OTEL_SERVICE_NAME ?? 'toolgate',
        'service.version': versionInfo().version,
        'service.instance.id': name,
      }),
      processors: [
        new BatchLogRecordProcessor({
          exporter,
          maxQueueSize: MAX_WAITING,
          scheduledDelayMillis: 1_000,
          exportTimeoutMillis: 10_000,
        }),
      ],
    })
    this.logger = this.provider.getLogger('toolgate.audit', versionInfo().version)
  }

  write(record: Record<string, unknown>): void {
    if (this.waiting >= MAX_WAITING) {
      this.onDrop(new Error(`OTLP log queue full (${MAX_WAITING} records waiting)`))
      return
    }
    this.waiting++
    const failure = record.outcome === 'failure' || record.outcome === 'denied'
    this.logger.emit({
      timestamp: new Date(String(record.time)),
      severityNumber: failure ? SeverityNumber.WARN : SeverityNumber.INFO,
      severityText: failure ? 'WARN' : 'INFO',
      body: String(record.event),
      attributes: attributesOf(record),
    })
  }

  /** Exports what is waiting, then stops. */
  close(): Promise<void> {
    return this.provider.shutdown()
  }

  /** The exporter, counting what each export delivers or loses. */
  private counting(inner: OTLPLogExporter): LogRecordExporter {
    return {
      export: (logs: ReadableLogRecord[], done) => {
        inner.export(logs, (result) => {
          this.waiting = Math.max(0, this.waiting - logs.length)
          if (result.code !== ExportResultCode.SUCCESS) {
            const err = result.error ?? new Error('OTLP log export failed')
            for (let i = 0; i < logs.length; i++) this.onDrop(err)
          }
          done(result)
        })
      },
      shutdown: () => inner.shutdown(),
      forceFlush: () => inner.forceFlush(),
    }
  }
}

type Attribute = string | number | boolean

/** Flat attributes: scalars as they are, objects and arrays as JSON text, `time` left out. */
function attributesOf(record: Record<string, unknown>): Record<string, Attribute> {
  const out: Record<string, Attribute> = {}
  for (const [key, value] of Object.entries(record)) {
    if (key === 'time' || value === undefined || value === null) continue
    out[key] =
      typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
        ? value
        : JSON.stringify(value)
  }
  return out
}
