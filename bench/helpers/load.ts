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
  return measured(url, {connections, seconds: opts.seconds ?? 4, headers, request})
}

/**
 * One run of MCP POSTs (`body`) on `connections` connections, at `rate` requests per second in all
 * (or as fast as they come back), with no warm-up of its own: for benchmarks that warm up several
 * servers at once and then measure them side by side.
 */
export function mcpPosts(
  url: string,
  opts: {connections: number; seconds: number; body: string; rate?: number | undefined},
): Promise<LoadResult> {
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  }
  const rate = opts.rate === undefined ? {} : {overallRate: opts.rate}
  const request = {method: 'POST', body: opts.body, ...rate}
  return measured(url, {connections: opts.connections, seconds: opts.seconds, headers, request})
}

async function measured(
  url: string,
  opts: {
    connections: number
    seconds: number
    headers: Record<string, string>
    request: Record<string, unknown>
  },
): Promise<LoadResult> {
  if (!/^http:\/\/(127\.0\.0\.1|\[::1\]|localhost)[:/]/.test(url))
    throw new Error(`loopback only: ${url}`)
  const {connections, headers} = opts
  const r = await autocannon({url, connections, duration: opts.seconds, headers, ...opts.request})
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
