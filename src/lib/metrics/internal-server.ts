import type {Server} from 'node:http'
import {
  allInterfaces,
  boundOf,
  closeGracefully,
  listen,
  parseListenAddress,
  urlOf,
} from '../http/listen.ts'
import {createServer} from '../http/node-http.ts'
import type {Logger} from '../log/logger.ts'
import {limitConnections, SERVER_LIMITS} from '../proxy/server-limits.ts'
import {createInternalHandler} from '../server/internal-handler.ts'
import type {MetricsRegistry} from './prometheus.ts'

/**
 * `proxy` and `run` with `--internal-address` (issue 35): the internal server `serve` has —
 * `/health`, `/readiness`, `/version`, `/metrics` — on its own address, never on the port clients
 * use, with the same socket limits as the proxy and at most 32 connections.
 */
export async function startInternalServer(
  address: string,
  deps: {metrics: MetricsRegistry; logger: Logger; ready: () => boolean},
): Promise<{url: string; close(): Promise<void>}> {
  const addr = parseListenAddress(address, '--internal-address')
  const server: Server = createServer(
    SERVER_LIMITS,
    createInternalHandler({metrics: deps.metrics, logger: deps.logger, sourcesLoaded: deps.ready}),
  )
  limitConnections(server, 32, deps.logger)
  const info = await listen(server, addr, '--internal-address')
  deps.logger.info('internal server listening', {
    address: boundOf(info),
    all_interfaces: allInterfaces(info),
    url: urlOf(info),
  })
  return {url: urlOf(info), close: () => closeGracefully(server, 1_000)}
}
