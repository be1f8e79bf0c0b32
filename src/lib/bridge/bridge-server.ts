import type {IncomingMessage, Server, ServerResponse} from 'node:http'
import {createServer} from '../http/node-http.ts'
import type {Logger} from '../log/logger.ts'
import {closeGracefully} from '../http/listen.ts'
import {listenOnSocket, privateSocket, type PrivateSocket} from '../http/private-socket.ts'
import type {UpstreamDispatcher} from '../proxy/forward.ts'
import {inProcessDispatcher} from './in-process-dispatcher.ts'
import {SERVER_LIMITS} from '../proxy/server-limits.ts'
import {SessionTable, type SessionLimits} from '../sessions/session-table.ts'
import {BufferBudget, DEFAULT_BUFFER_BUDGET} from './buffer-budget.ts'
import type {BridgeContext, BridgeSession} from './bridge-sessions.ts'
import {answerJson} from './http-common.ts'
import type {LaneSource} from './lane.ts'
import {LegacySseEndpoint} from './legacy-sse.ts'
import {errorMessage} from './multiplexer.ts'
import {StreamableHttpEndpoint} from './streamable-http.ts'

/**
 * The stdio ↔ HTTP bridge of `toolgate run` (issue 11). It listens on a private endpoint — a unix
 * socket in a fresh 0700 directory, or a random named pipe on Windows — that only the workload's
 * own proxy pipeline reaches (ProxyConfig.targetSocketPath), so origin checks, incoming auth, Cedar
 * and every limit stay in the one public front. The front names the caller's principal on every
 * request (sessions/principal-key.ts); sessions, quotas and server processes follow it.
 */

export interface BridgeOptions {
  logger: Logger
  maxBodyBytes: number
  /** Sessions per principal, in total, and their expiry (sessions/session-table.ts). */
  sessionLimits?: Partial<SessionLimits>
  /** Bytes held for every client stream together (buffer-budget.ts). */
  bufferBudgetBytes?: number
  /** How often expired sessions are looked for. */
  sweepMs?: number
  /** The clock of session expiry (tests move it). */
  now?: () => number
  /**
   * No socket: the workload's front reaches the bridge in this process (in-process-dispatcher.ts).
   * For the gateway (issue 37), whose "server" is in this process too.
   */
  inProcess?: boolean
}

export interface Bridge {
  /** The private socket the front forwards to; undefined in process. */
  socketPath: string | undefined
  /** In process: what the front forwards through. */
  dispatcher: UpstreamDispatcher | undefined
  /** Sessions now (for tests and `list`). */
  readonly sessions: number
  close(): Promise<void>
}

export async function startBridge(options: BridgeOptions, lanes: LaneSource): Promise<Bridge> {
  const {logger} = options
  const ctx: BridgeContext = {
    lanes,
    table: new SessionTable<BridgeSession>(options.sessionLimits, options.now),
    budget: new BufferBudget(options.bufferBudgetBytes ?? DEFAULT_BUFFER_BUDGET, logger),
    maxBodyBytes: options.maxBodyBytes,
    logger,
  }
  const streamable = new StreamableHttpEndpoint(ctx)
  const legacy = new LegacySseEndpoint(ctx)

  // Clients often just go away without DELETE: sessions past their time (session-table.ts) end,
  // so abandoned sessions never fill the quotas.
  const sweep = setInterval(() => {
    const expired = ctx.table.expire((entry) => entry.value.busy())
    for (const entry of expired) entry.value.end('session expired')
    if (expired.length > 0) logger.debug('sessions expired', {count: expired.length})
  }, options.sweepMs ?? 5_000)
  sweep.unref()

  const listener = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://bridge')
    const down = lanes.unavailable()
    if (down) {
      res.setHeader('retry-after', '2')
      return answerJson(res, 503, errorMessage(null, -32002, down))
    }
    const done = (err: unknown) => {
      logger.warn('bridge request failed', {error: (err as Error).message})
      answerJson(res, 500, errorMessage(null, -32603, 'Internal error'))
    }
    if (url.pathname === '/mcp') streamable.handle(req, res).catch(done)
    else if (url.pathname === '/sse') legacy.open(req, res).catch(done)
    else if (url.pathname === '/messages') legacy.message(req, res, url).catch(done)
    else answerJson(res, 404, errorMessage(null, -32601, 'Not found'))
  }

  let server: Server | undefined
  let socket: PrivateSocket | undefined
  if (!options.inProcess) {
    server = createServer(SERVER_LIMITS, listener)
    socket = await privateSocket('bridge')
    await listenOnSocket(server, socket.path)
  }
  const dispatcher = options.inProcess ? inProcessDispatcher(listener) : undefined

  return {
    socketPath: socket?.path,
    dispatcher,
    get sessions() {
      return ctx.table.size
    },
    async close() {
      clearInterval(sweep)
      for (const entry of [...ctx.table.values()]) entry.value.end('the workload stopped')
      if (server) await closeGracefully(server, 500)
      await dispatcher?.close()
      await lanes.close()
      await socket?.remove()
    },
  }
}
