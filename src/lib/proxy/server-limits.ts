import type {Server, ServerOptions} from 'node:http'
import type {Socket} from 'node:net'
import type {Logger} from '../log/logger.ts'
import {unauthorizedAnswer} from './incoming-auth.ts'
import type {ProxyConfig} from './proxy-server.ts'

/**
 * Limits of the proxy's listening socket, so a slow or hostile client cannot hold it: every
 * request must send its head within `headersTimeout` (slowloris) and be received whole within
 * `requestTimeout`. Neither cuts a long response: both stop counting once the request is in, so
 * SSE streams and slow tool calls run as long as they need. Bodies that are read before
 * forwarding also have an idle timeout (request-body.ts).
 */
export const SERVER_LIMITS: ServerOptions = {
  headersTimeout: 20_000,
  requestTimeout: 120_000,
  // Longer than the usual load balancer idle timeout (60 s), so the balancer closes first.
  keepAliveTimeout: 65_000,
  // 16 KiB is Node's default; a JWT with many claims fits. Larger heads get 431.
  maxHeaderSize: 16 * 1024,
  connectionsCheckingInterval: 5_000,
}

export const DEFAULT_MAX_CONNECTIONS = 512

const JSON_HEAD = 'content-type: application/json\r\nx-content-type-options: nosniff\r\n'

function rawAnswer(status: string, body: string, extra: Record<string, string> = {}): string {
  const headers = Object.entries(extra)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')
  return `HTTP/1.1 ${status}\r\n${JSON_HEAD}${headers}connection: close\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
}

/** Connections open now, and how many may be, over several servers. */
export interface ConnectionBudget {
  open: number
  max: number
}

/**
 * At most `max` client connections at once; one more is answered 503 (with Retry-After) and closed
 * before its request is read, so a flood of idle connections never exhausts file descriptors
 * (EMFILE) and everyone else's requests keep working.
 */
export function limitConnections(
  server: Server,
  max: number,
  log: Logger,
  /** A limit this server shares with others (the egress proxy's, over all its sandboxes). */
  shared?: ConnectionBudget,
): (socket: Socket) => boolean {
  const refused = new WeakSet<Socket>()
  let open = 0
  let lastWarned = 0
  server.on('connection', (socket: Socket) => {
    if (open >= max || (shared && shared.open >= shared.max)) {
      if (Date.now() - lastWarned > 10_000) {
        lastWarned = Date.now()
        log.warn('connection limit reached: answering 503', {
          max,
          ...(shared && {shared: shared.max}),
        })
      }
      refused.add(socket)
      socket.on('error', () => undefined)
      socket.end(
        rawAnswer('503 Service Unavailable', '{"error":"too many connections"}', {
          'retry-after': '1',
        }),
      )
      socket.destroySoon()
      return
    }
    open++
    if (shared) shared.open++
    socket.once('close', () => {
      open--
      if (shared) shared.open--
    })
  })
  // The HTTP parser is already attached to a refused socket: its request must not be handled.
  return (socket) => refused.has(socket)
}

/** In OIDC mode, the RFC 6750 challenge a client needs when its oversized head held a token. */
export function clientErrorChallenge(config: ProxyConfig): Record<string, string> | undefined {
  if (!config.oidc) return undefined
  return unauthorizedAnswer(
    config.oidc,
    config.resourceUrl,
    'invalid_request',
    'request header fields too large',
  ).headers
}

/**
 * Malformed requests get the status that says why (RFC 9110 §15.5): 431 for an oversized head
 * (RFC 6585 §5), 408 when the head or body did not arrive in time, else 400 — with a JSON body,
 * never a silent reset.
 */
export function answerClientErrors(server: Server, challenge?: Record<string, string>): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable || (err.code === 'ECONNRESET' && !socket.readable)) {
      socket.destroy()
      return
    }
    const text =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? rawAnswer(
            '431 Request Header Fields Too Large',
            '{"error":"request header fields too large"}',
            challenge ?? {},
          )
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' || err.code === 'ERR_HTTP_HEADERS_TIMEOUT'
          ? rawAnswer('408 Request Timeout', '{"error":"request timeout"}')
          : rawAnswer('400 Bad Request', '{"error":"bad request"}')
    socket.end(text)
    socket.destroySoon()
  })
}
