import {Counter, Gauge, Histogram, MetricsRegistry} from './prometheus.ts'

/**
 * The metrics `toolgate serve` exposes on the internal server's `/metrics` (contract §1):
 * requests and latency by route and status, source sync outcomes, stored versions, process memory.
 * Route labels are route templates (never raw paths) so the label set stays bounded.
 */
export interface SourceSample {
  source: string
  syncs: number
  errors: number
  /** Unix ms of the last successful sync, when there was one. */
  lastSuccessMs?: number
  /** Versions the source held after its last successful sync. */
  versions?: number
  /** Duration of this replica's last sync of the source. */
  lastDurationMs?: number
}

/** A shared (PostgreSQL) store's state at scrape time. */
export interface StoreSample {
  up: boolean
  pool: {inFlight: number; max: number}
  /** Each source's last successful sync by any replica, Unix ms. */
  lastSuccessMs: Map<string, number>
}

export interface ServeMetrics {
  registry: MetricsRegistry
  observeRequest(route: string, status: number, seconds: number): void
  /** A request refused by a rate limit (`read` or `publish`). */
  rateLimited(kind: string): void
  /** Where the per-source totals come from (read at scrape time). */
  setSourceSamples(fn: () => SourceSample[]): void
  /** Where the number of stored versions comes from (read at scrape time). */
  setVersionCounter(count: () => Promise<number>): void
  /** Where a shared store's state comes from (read at scrape time). */
  setStoreSamples(fn: () => Promise<StoreSample>): void
}

const STATUS_LABELS = new Map<number, string>()
function statusLabel(status: number): string {
  let s = STATUS_LABELS.get(status)
  if (s === undefined) {
    s = String(status)
    STATUS_LABELS.set(status, s)
  }
  return s
}

export function createServeMetrics(): ServeMetrics {
  const registry = new MetricsRegistry()
  let samples: () => SourceSample[] = () => []
  let countVersions: (() => Promise<number>) | undefined
  let storeSamples: (() => Promise<StoreSample>) | undefined
  let store: StoreSample | undefined

  const requests = registry.register(
    new Counter('toolgate_http_requests_total', 'HTTP requests answered on the main port.', [
      'route',
      'status',
    ]),
  )
  const limited = registry.register(
    new Counter(
      'toolgate_rate_limited_total',
      'Requests refused with 429 by a rate limit (rateLimits), by kind.',
      ['kind'],
    ),
  )
  const latency = registry.register(
    new Histogram(
      'toolgate_http_request_duration_seconds',
      'Time to answer a request on the main port.',
      ['route', 'status'],
    ),
  )
  const each = (g: Gauge, pick: (s: SourceSample) => number | undefined) => {
    for (const s of samples()) {
      const v = pick(s)
      if (v !== undefined) g.set([s.source], v)
    }
  }
  registry.register(
    new Gauge(
      'toolgate_source_syncs_total',
      'Source synchronisations attempted (successes and failures).',
      ['source'],
      (g) => each(g, (s) => s.syncs),
      'counter',
    ),
  )
  registry.register(
    new Gauge(
      'toolgate_source_sync_errors_total',
      'Failed source synchronisations.',
      ['source'],
      (g) => each(g, (s) => s.errors),
      'counter',
    ),
  )
  registry.register(
    new Gauge(
      'toolgate_source_last_success_timestamp_seconds',
      'Unix time of the last successful sync.',
      ['source'],
      (g) =>
        each(g, (s) => {
          // On a shared store, the last success of any replica: the data every replica serves.
          const ms = store?.lastSuccessMs.get(s.source) ?? s.lastSuccessMs
          return ms === undefined ? undefined : ms / 1000
        }),
    ),
  )
  registry.register(
    new Gauge(
      'toolgate_source_sync_duration_seconds',
      "Duration of this replica's last sync of the source.",
      ['source'],
      (g) => each(g, (s) => (s.lastDurationMs === undefined ? undefined : s.lastDurationMs / 1000)),
    ),
  )
  registry.register(
    new Gauge(
      'toolgate_storage_up',
      'Whether the database answered at the last scrape.',
      [],
      (g) => {
        if (store) g.set([], store.up ? 1 : 0)
      },
    ),
  )
  registry.register(
    new Gauge('toolgate_db_pool_connections', 'Database pool size.', [], (g) => {
      if (store) g.set([], store.pool.max)
    }),
  )
  registry.register(
    new Gauge(
      'toolgate_db_pool_in_use',
      'Database calls in progress (above the pool size, calls queue for a connection).',
      [],
      (g) => {
        if (store) g.set([], store.pool.inFlight)
      },
    ),
  )
  registry.register(
    new Gauge(
      'toolgate_source_versions',
      'Server versions a source held after its last successful sync.',
      ['source'],
      (g) => each(g, (s) => s.versions),
    ),
  )
  const versions = registry.register(
    new Gauge('toolgate_registry_stored_versions', 'Server versions held by the store.'),
  )
  registry.onScrape(async () => {
    if (storeSamples) store = await storeSamples()
    // A database that does not answer leaves the gauge out rather than failing the scrape.
    if (countVersions && store?.up !== false)
      await countVersions().then(
        (n) => versions.set([], n),
        () => undefined,
      )
  })
  registry.register(
    new Gauge('process_resident_memory_bytes', 'Resident memory size in bytes.', [], (g) =>
      g.set([], process.memoryUsage.rss()),
    ),
  )
  registry.register(
    new Gauge('nodejs_heap_used_bytes', 'V8 heap in use, in bytes.', [], (g) =>
      g.set([], process.memoryUsage().heapUsed),
    ),
  )
  // Where resident memory goes when it is not the V8 heap: the heap's reserved size, and memory
  // outside it (Buffers and other native allocations V8 knows of).
  registry.register(
    new Gauge('nodejs_heap_total_bytes', 'V8 heap reserved, in bytes.', [], (g) =>
      g.set([], process.memoryUsage().heapTotal),
    ),
  )
  registry.register(
    new Gauge(
      'nodejs_external_memory_bytes',
      'Memory outside the V8 heap held by JavaScript objects (Buffers included), in bytes.',
      [],
      (g) => g.set([], process.memoryUsage().external),
    ),
  )
  const startedAt = Date.now() / 1000
  registry.register(
    new Gauge('process_start_time_seconds', 'Unix time the process started.', [], (g) =>
      g.set([], startedAt),
    ),
  )

  return {
    registry,
    rateLimited(kind) {
      limited.inc([kind])
    },
    observeRequest(route, status, seconds) {
      const labels = [route, statusLabel(status)]
      requests.inc(labels)
      latency.observe(labels, seconds)
    },
    setSourceSamples(fn) {
      samples = fn
    },
    setVersionCounter(count) {
      countVersions = count
    },
    setStoreSamples(fn) {
      storeSamples = fn
    },
  }
}
