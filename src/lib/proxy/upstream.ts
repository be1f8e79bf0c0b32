import {ToolgateError} from '../errors.ts'
import type {UpstreamDispatcher} from './forward.ts'
import {targetPaths} from './endpoint-target.ts'
import {currentNetwork} from '../network/settings.ts'

export interface UpstreamTimeouts {
  connectMs: number
  /** Time to the response head. Generous: a JSON (non-SSE) tool result arrives only when the tool ends. */
  headersMs: number
  /** Idle time between body chunks; 0 = none, since SSE streams may idle for long. */
  bodyMs: number
}

export const DEFAULT_TIMEOUTS: UpstreamTimeouts = {connectMs: 10_000, headersMs: 300_000, bodyMs: 0}

export interface Upstream {
  readonly target: URL
  readonly dispatcher: UpstreamDispatcher
  /** Maps the client's request target onto the target URI's path prefix. */
  pathFor(requestUrl: string): string
  close(): Promise<void>
}

/**
 * The target connection pool: one keep-alive pool per origin (undici Agent → Pool), so the common
 * case of many small JSON-RPC POSTs reuses sockets instead of paying a TCP handshake each time.
 * A private socket of a process this tool started goes through node:http instead, and undici is
 * then never loaded (socket-dispatcher.ts says why).
 */
export async function createUpstream(
  target: URL,
  timeouts: UpstreamTimeouts = DEFAULT_TIMEOUTS,
  /**
   * Connect here instead of the target's host and port: a unix socket (or Windows named pipe) of a
   * process this tool started, so its private endpoint is reachable only through the pipeline.
   * `target` still gives the origin (Host) and the base path.
   */
  socketPath?: string,
  /** A target in this process (the gateway's bridge): forwarded through this, no socket. */
  inProcess?: UpstreamDispatcher,
): Promise<Upstream> {
  if (target.protocol !== 'http:' && target.protocol !== 'https:') {
    throw new ToolgateError(
      'ERR_USAGE',
      `--target-uri: scheme must be http or https, got ${target.protocol}`,
    )
  }
  const dispatcher: UpstreamDispatcher =
    inProcess ??
    (socketPath
      ? (await import('./socket-dispatcher.ts')).socketDispatcher(socketPath, timeouts)
      : await remoteDispatcher(timeouts))
  const {prefix} = targetPaths(target)
  return {
    target,
    dispatcher,
    // Like a reverse proxy's single-host join: target `/base` + client `/mcp` → `/base/mcp`;
    // with a bare origin as target, paths pass unchanged (contract §3). A target naming the
    // endpoint (`/base/mcp`) is joined from `/base` (endpoint-target.ts).
    pathFor(requestUrl) {
      const url = requestUrl.startsWith('/') ? requestUrl : '/' + requestUrl
      return prefix + url
    },
    async close() {
      await dispatcher.close()
    },
  }
}

/**
 * Toward a remote target: a keep-alive pool per origin, through the outbound proxy when the
 * network settings say so, trusting --ca-cert / --use-system-ca too (issue 34).
 */
async function remoteDispatcher(timeouts: UpstreamTimeouts): Promise<UpstreamDispatcher> {
  const {Agent} = await import('undici')
  const {routedDispatcher} = await import('../network/dispatcher.ts')
  const network = currentNetwork()
  const direct = new Agent({
    connect: {timeout: timeouts.connectMs, ...(network.ca ? {ca: network.ca} : {})},
    headersTimeout: timeouts.headersMs,
    bodyTimeout: timeouts.bodyMs,
    keepAliveTimeout: 30_000,
    connections: 128,
    pipelining: 1,
  })
  return routedDispatcher(direct, network, {
    ca: network.ca,
    connectTimeout: timeouts.connectMs,
    headersTimeout: timeouts.headersMs,
    bodyTimeout: timeouts.bodyMs,
  })
}

export function isConnectFailure(err: unknown): boolean {
  const code = (err as {code?: string})?.code
  return (
    code === 'ECONNREFUSED' ||
    code === 'ECONNRESET' ||
    code === 'ENOTFOUND' ||
    code === 'ENOENT' || // a unix-socket target that is not there (yet)
    code === 'EHOSTUNREACH' ||
    code === 'UND_ERR_CONNECT_TIMEOUT' ||
    code === 'UND_ERR_SOCKET'
  )
}
