import {Dispatcher, ProxyAgent} from 'undici'
import {proxyFor, type NetworkSettings} from './settings.ts'

/**
 * An undici dispatcher that sends each request the way the network settings say: through the
 * outbound proxy for its scheme (an HTTP CONNECT tunnel, proxy credentials from the proxy URL as
 * Basic), or directly for loopback, `NO_PROXY` hosts and when no proxy is set. Without any proxy
 * the direct dispatcher is returned as it is: nothing is added to the hot path.
 */
export interface RouteOptions {
  /** undici Agent limits for the proxied connections (the direct ones have their own). */
  headersTimeout?: number
  bodyTimeout?: number
  connectTimeout?: number
  /** The trust for TLS to the destination (and to an https:// proxy). */
  ca?: string | string[] | undefined
}

export function routedDispatcher(
  direct: Dispatcher,
  settings: NetworkSettings,
  options: RouteOptions = {},
): Dispatcher {
  if (!settings.proxy.http && !settings.proxy.https) return direct
  return new RoutedDispatcher(direct, settings, options)
}

class RoutedDispatcher extends Dispatcher {
  private readonly proxied = new Map<string, ProxyAgent>()
  // Origins seen → the proxy for each ('' = direct); bounded, it is only a cache.
  private readonly routes = new Map<string, string>()
  private readonly direct: Dispatcher
  private readonly settings: NetworkSettings
  private readonly options: RouteOptions

  constructor(direct: Dispatcher, settings: NetworkSettings, options: RouteOptions) {
    super()
    this.direct = direct
    this.settings = settings
    this.options = options
  }

  override dispatch(
    opts: Dispatcher.DispatchOptions,
    handler: Dispatcher.DispatchHandler,
  ): boolean {
    const origin = String(opts.origin)
    let route = this.routes.get(origin)
    if (route === undefined) {
      route = proxyFor(this.settings, new URL(origin))?.href ?? ''
      if (this.routes.size > 1024) this.routes.clear()
      this.routes.set(origin, route)
    }
    return (route ? this.agentFor(route) : this.direct).dispatch(opts, handler)
  }

  private agentFor(proxy: string): ProxyAgent {
    let agent = this.proxied.get(proxy)
    if (!agent) {
      const {ca, connectTimeout, headersTimeout, bodyTimeout} = this.options
      const tls = {...(ca ? {ca} : {}), ...(connectTimeout ? {timeout: connectTimeout} : {})}
      agent = new ProxyAgent({
        uri: proxy,
        requestTls: tls,
        proxyTls: tls,
        ...(headersTimeout !== undefined ? {headersTimeout} : {}),
        ...(bodyTimeout !== undefined ? {bodyTimeout} : {}),
      })
      this.proxied.set(proxy, agent)
    }
    return agent
  }

  override async close(): Promise<void> {
    await Promise.all([this.direct.close(), ...[...this.proxied.values()].map((a) => a.close())])
  }

  override destroy(err: Error | null, callback: () => void): void
  override destroy(callback: () => void): void
  override destroy(err: Error | null): Promise<void>
  override destroy(): Promise<void>
  override destroy(a?: unknown, b?: unknown): Promise<void> | void {
    const err = a instanceof Error ? a : null
    const callback = typeof a === 'function' ? a : typeof b === 'function' ? b : undefined
    const all = [this.direct, ...this.proxied.values()]
    const done = Promise.all(all.map((d) => d.destroy(err))).then(() => undefined)
    if (!callback) return done
    void done.then(() => (callback as () => void)())
  }
}
