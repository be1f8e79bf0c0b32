import {createOutboundClient} from '../http/outbound.ts'
import {isLoopbackHost} from './no-proxy.ts'
import {currentNetwork, proxyFor, redactProxy} from './settings.ts'

/** `toolgate doctor network [URL]`: what a request would go through, and whether it gets there. */
export interface NetworkReport {
  event: 'network'
  proxy: {http: string | null; https: string | null}
  proxySource: {http: string | null; https: string | null}
  noProxy: string
  trust: string[]
  url?: string
  route?: string
  reached?: boolean
  status?: number
  ms?: number
  error?: string
  code?: string
}

export async function diagnoseNetwork(url: string | undefined): Promise<NetworkReport> {
  const s = currentNetwork()
  const shown = (u: URL | undefined) => (u ? redactProxy(u) : null)
  const report: NetworkReport = {
    event: 'network',
    proxy: {http: shown(s.proxy.http), https: shown(s.proxy.https)},
    proxySource: {http: s.proxySource.http ?? null, https: s.proxySource.https ?? null},
    noProxy: s.noProxyText,
    trust: s.trust,
  }
  if (!url) return report
  const target = new URL(url)
  const proxy = proxyFor(s, target)
  const scheme = target.protocol === 'https:' ? 'https' : 'http'
  report.url = target.href
  report.route = proxy
    ? `through ${redactProxy(proxy)} (from ${s.proxySource[scheme]})`
    : isLoopbackHost(target.hostname)
      ? 'direct (loopback is never proxied)'
      : s.proxy[scheme]
        ? 'direct (NO_PROXY matches)'
        : 'direct (no proxy set)'
  // The user's own diagnosis: any destination may be tried, private ones included.
  const client = createOutboundClient({timeoutMs: 10_000, allowPrivateIP: true})
  const started = performance.now()
  try {
    const res = await client.fetch(target, {method: 'GET'})
    await res.body?.cancel().catch(() => undefined)
    Object.assign(report, {
      reached: true,
      status: res.status,
      ms: Math.round(performance.now() - started),
    })
  } catch (err) {
    const e = err as {message: string; code?: string}
    Object.assign(report, {reached: false, error: e.message, ...(e.code ? {code: e.code} : {})})
  } finally {
    await client.close()
  }
  return report
}

export function reportLines(r: NetworkReport): string[] {
  const lines = [
    `HTTPS proxy: ${r.proxy.https ? `${r.proxy.https} (${r.proxySource.https})` : 'none'}`,
    `HTTP proxy:  ${r.proxy.http ? `${r.proxy.http} (${r.proxySource.http})` : 'none'}`,
    `No proxy for: ${r.noProxy || '-'} (and loopback, always)`,
    `Trusted CAs: ${r.trust.join(', ')}`,
  ]
  if (r.url) {
    lines.push(`${r.url}: ${r.route}`)
    lines.push(r.reached ? `  reached: HTTP ${r.status} in ${r.ms} ms` : `  failed: ${r.error}`)
  }
  return lines
}
