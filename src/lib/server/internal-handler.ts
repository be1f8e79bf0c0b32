import type {IncomingMessage, ServerResponse} from 'node:http'
import type {Logger} from '../log/logger.ts'
import type {MetricsRegistry} from '../metrics/prometheus.ts'
import type {RegistryStore} from '../registry/types.ts'
import {versionInfo} from '../version.ts'
import {isReadMethod, sendErrorBody, sendMethodNotAllowed, sendText} from './respond.ts'

/**
 * The internal server (contract §1, `--internal-address`): `/health`, `/readiness`, `/version`,
 * `/metrics`. Never mounted on the main port, so probes and metrics need no token and are not
 * exposed where the API is.
 */
export interface InternalHandlerOptions {
  /** serve: the store must answer for /readiness (proxy and run have none). */
  store?: RegistryStore
  /** True once every configured source has loaded at least once (serve), or the proxy is up. */
  sourcesLoaded: () => boolean
  metrics: MetricsRegistry
  logger: Logger
}

const HEALTHY = JSON.stringify({status: 'healthy'})
const READY = JSON.stringify({status: 'ready'})
// Prometheus exposition format 0.0.4 content type.
const PROM_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

export function createInternalHandler(opts: InternalHandlerOptions) {
  const version = JSON.stringify(versionInfo())
  return (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? '/').split('?', 1)[0]
    if (path !== '/health' && path !== '/readiness' && path !== '/version' && path !== '/metrics') {
      sendErrorBody(res, 404, 'not found')
      return
    }
    if (!isReadMethod(req.method)) {
      sendMethodNotAllowed(res)
      return
    }
    switch (path) {
      case '/health':
        sendText(res, 200, HEALTHY)
        return
      case '/version':
        sendText(res, 200, version)
        return
      case '/readiness':
        readiness(opts).then(
          (ready) =>
            ready ? sendText(res, 200, READY) : sendErrorBody(res, 503, 'service not ready'),
          () => sendErrorBody(res, 503, 'service not ready'),
        )
        return
      case '/metrics':
        opts.metrics.render().then(
          (text) => sendText(res, 200, text, PROM_TYPE),
          (err: unknown) => {
            opts.logger.error('metrics rendering failed', {err: err as Error})
            sendErrorBody(res, 500, 'internal server error')
          },
        )
        return
    }
  }
}

async function readiness(opts: InternalHandlerOptions): Promise<boolean> {
  if (!opts.sourcesLoaded()) return false
  if (!opts.store) return true
  try {
    await opts.store.ping()
    return true
  } catch (err) {
    opts.logger.warn('storage does not answer', {err: err as Error})
    return false
  }
}
