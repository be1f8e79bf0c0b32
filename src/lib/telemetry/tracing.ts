import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  defaultTextMapGetter,
  defaultTextMapSetter,
  trace,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api'
import {W3CTraceContextPropagator} from '@opentelemetry/core'
import {OTLPTraceExporter} from '@opentelemetry/exporter-trace-otlp-http'
import {resourceFromAttributes} from '@opentelemetry/resources'
import {BatchSpanProcessor, TracerProvider} from '@opentelemetry/sdk-trace'
import type {IncomingHttpHeaders} from 'node:http'
import {versionInfo} from '../version.ts'

/**
 * OpenTelemetry tracing of `proxy` and `run` (issue 35), with the official SDK, off unless an OTLP
 * endpoint is configured (`--otel-endpoint`, or the standard `OTEL_EXPORTER_OTLP_ENDPOINT` /
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`). One server span per request, continued from the client's
 * W3C `traceparent`, with children for incoming authentication, authorization, outgoing
 * credentials and the upstream call; the upstream gets a `traceparent` naming that last span.
 * Spans are passed explicitly (no global context manager): nothing changes for untraced code.
 */
export interface RequestTrace {
  traceId: string
  /** A child step; `end()` it (with the error, if it failed). */
  step(name: string): {end(err?: unknown): void}
  /** The upstream call's span; its `traceparent` (and `tracestate`) go on the forwarded request. */
  upstream(): {headers: Record<string, string>; end(status: number): void}
  end(status: number, attributes?: Record<string, string | number>): void
}

export interface Tracing {
  start(method: string, path: string, headers: IncomingHttpHeaders, workload: string): RequestTrace
  shutdown(): Promise<void>
}

const propagator = new W3CTraceContextPropagator()

/** Tracing when an endpoint is configured; undefined otherwise (no SDK work at all). */
export function tracingFromEnv(
  endpoint: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Tracing | undefined {
  const configured =
    endpoint ?? env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT
  if (!configured || env.OTEL_SDK_DISABLED === 'true') return undefined
  // The flag names the collector's base URL, as OTEL_EXPORTER_OTLP_ENDPOINT does.
  const url = endpoint ? `${endpoint.replace(/\/+$/, '')}/v1/traces` : undefined
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      'service.name': env.OTEL_SERVICE_NAME ?? 'toolgate',
      'service.version': versionInfo().version,
    }),
    spanProcessors: [
      // Bounded: past 2,048 waiting spans new ones are dropped, never a growing buffer.
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter(url ? {url} : {}),
        scheduledDelayMillis: 1_000,
        maxQueueSize: 2_048,
      }),
    ],
  })
  const tracer = provider.getTracer('toolgate', versionInfo().version)
  return {
    start: (method, path, headers, workload) =>
      startRequest(tracer, method, path, headers, workload),
    shutdown: () => provider.shutdown(),
  }
}

function startRequest(
  tracer: Tracer,
  method: string,
  path: string,
  headers: IncomingHttpHeaders,
  workload: string,
): RequestTrace {
  const parent = propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter)
  const span = tracer.startSpan(
    `${method} ${path.split('?', 1)[0]}`,
    {
      kind: SpanKind.SERVER,
      attributes: {
        'http.request.method': method,
        'url.path': path.split('?', 1)[0]!.slice(0, 200),
        'toolgate.workload': workload,
      },
    },
    parent,
  )
  const inside: Context = trace.setSpan(parent, span)
  const child = (name: string, kind = SpanKind.INTERNAL): Span =>
    tracer.startSpan(name, {kind}, inside)
  return {
    traceId: span.spanContext().traceId,
    step(name) {
      const s = child(name)
      return {
        end(err?: unknown) {
          if (err)
            s.setStatus({
              code: SpanStatusCode.ERROR,
              message: String((err as Error)?.message ?? err),
            })
          s.end()
        },
      }
    },
    upstream() {
      const s = child('upstream', SpanKind.CLIENT)
      const carrier: Record<string, string> = {}
      propagator.inject(trace.setSpan(inside, s), carrier, defaultTextMapSetter)
      return {
        headers: carrier,
        end(status: number) {
          s.setAttribute('http.response.status_code', status)
          if (status >= 500) s.setStatus({code: SpanStatusCode.ERROR})
          s.end()
        },
      }
    },
    end(status, attributes = {}) {
      span.setAttribute('http.response.status_code', status)
      for (const [k, v] of Object.entries(attributes)) span.setAttribute(k, v)
      if (status >= 500) span.setStatus({code: SpanStatusCode.ERROR})
      span.end()
    },
  }
}
