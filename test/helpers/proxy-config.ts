import type {ProxyConfig} from '../../src/lib/proxy/proxy-server.ts'

/** The smallest proxy configuration: loopback, a free port, default body limit, no extras. */
export function loopbackProxyConfig(
  target: string | URL,
  extra: Partial<ProxyConfig> = {},
): ProxyConfig {
  return {
    name: 'test',
    targetUri: new URL(target),
    host: '127.0.0.1',
    port: 0,
    maxRequestBodySize: 0,
    forwardHeaders: [],
    ...extra,
  }
}
