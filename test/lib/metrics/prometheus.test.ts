import {test} from 'node:test'
import assert from 'node:assert/strict'
import {Counter, Gauge, Histogram, MetricsRegistry} from '../../../src/lib/metrics/prometheus.ts'
import {createServeMetrics} from '../../../src/lib/metrics/serve-metrics.ts'

test('renders counters, gauges and cumulative histograms in the text exposition format', async () => {
  const reg = new MetricsRegistry()
  const c = reg.register(new Counter('req_total', 'Requests.', ['route', 'status']))
  const h = reg.register(new Histogram('lat_seconds', 'Latency.', ['route'], [0.1, 1]))
  reg.register(new Gauge('up', 'Up.', [], (g) => g.set([], 1)))
  c.inc(['a', '200'])
  c.inc(['a', '200'])
  c.inc(['b"\\\n', '404'])
  h.observe(['a'], 0.05)
  h.observe(['a'], 0.5)
  h.observe(['a'], 5)
  const text = await reg.render()
  assert.match(text, /^# HELP req_total Requests\.\n# TYPE req_total counter\n/)
  assert.match(text, /^req_total\{route="a",status="200"\} 2$/m)
  assert.match(text, /^req_total\{route="b\\"\\\\\\n",status="404"\} 1$/m)
  assert.match(text, /^# TYPE lat_seconds histogram$/m)
  assert.match(text, /^lat_seconds_bucket\{route="a",le="0\.1"\} 1$/m)
  assert.match(text, /^lat_seconds_bucket\{route="a",le="1"\} 2$/m)
  assert.match(text, /^lat_seconds_bucket\{route="a",le="\+Inf"\} 3$/m)
  assert.match(text, /^lat_seconds_sum\{route="a"\} 5\.55$/m)
  assert.match(text, /^lat_seconds_count\{route="a"\} 3$/m)
  assert.match(text, /^up 1$/m)
  assert.ok(text.endsWith('\n'))
})

test('serve metrics expose requests by route and status, source totals, stored versions and memory', async () => {
  const m = createServeMetrics()
  m.observeRequest('list_servers', 200, 0.002)
  m.setSourceSamples(() => [
    {source: 'local', syncs: 3, errors: 1, lastSuccessMs: 1_700_000_000_000, versions: 11},
  ])
  m.setVersionCounter(async () => 42)
  const text = await m.registry.render()
  assert.match(text, /^toolgate_http_requests_total\{route="list_servers",status="200"\} 1$/m)
  assert.match(
    text,
    /^toolgate_http_request_duration_seconds_bucket\{route="list_servers",status="200",le="0\.0025"\} 1$/m,
  )
  assert.match(text, /^# TYPE toolgate_source_syncs_total counter$/m)
  assert.match(text, /^toolgate_source_syncs_total\{source="local"\} 3$/m)
  assert.match(text, /^toolgate_source_sync_errors_total\{source="local"\} 1$/m)
  assert.match(
    text,
    /^toolgate_source_last_success_timestamp_seconds\{source="local"\} 1700000000$/m,
  )
  assert.match(text, /^toolgate_registry_stored_versions 42$/m)
  assert.match(text, /^process_resident_memory_bytes \d+$/m)
})
