/** autocannon, programmatic, loopback only, bounded by duration. */
import {createRequire} from 'node:module'

export interface LoadResult {
  rps: number
  p50: number
  p99: number
  mean: number
  requests: number
  errors: number
  non2xx: number
}

interface AutocannonResult {
  requests: {average: number; total: number}
  latency: {p50: number; p99: number; mean: number}
  errors: number
  timeouts: number
  non2xx: number
}
type Autocannon = (opts: Record<string, unknown>) => Promise<AutocannonResult>
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon

export async function load(
  url: string,
  opts: {
    connections?: number
    seconds?: number
    headers?: Record<string, string>
    /** A POST with this body (default: GET). */
    body?: string
    /** Requests per second in all (default: as fast as they come back). */
    rate?: number
  } = {},
): Promise<LoadResult> {
  if (!/^http:\/\/(127\.0\.0\.1|\[::1\]|localhost)[:/]/.test(url))
    throw new Error(`loopback only: ${url}`)
  const connections = opts.connections ?? 64
  // Warm-up (JIT, caches, connection setup) is not measured.
  const headers = opts.headers ?? {}
  const request = {
    ...(opts.body === undefined ? {} : {method: 'POST', body: opts.body}),
    ...(opts.rate === undefined ? {} : {overallRate: opts.rate}),
  }
  await autocannon({url, connections, duration: 1, headers, ...request})
  const r = await autocannon({url, connections, duration: opts.seconds ?? 4, headers, ...request})
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    mean: r.latency.mean,
    requests: r.requests.total,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
  }
}
