import type {IncomingMessage, ServerResponse} from 'node:http'
import {connect, type Socket} from 'node:net'
import {request} from '../http/node-http.ts'
import type {Logger} from '../log/logger.ts'
import {endToEndHeaders} from '../proxy/hop-by-hop.ts'
import {relayTo} from './relay.ts'

/** What the egress proxy (egress-proxy.ts) gives the plain-http forwarder. */
export interface PlainForwarding {
  /** The profile's verdict on host:port, logged and counted. */
  decide(host: string, port: number, method: string): boolean
  log: Logger
  /** Client connections a response is being relayed on. */
  relaying: WeakSet<Socket>
  connectTimeoutMs: number
  idleMs: number
}

/**
 * `GET http://host:port/path` — plain HTTP through the sandbox's egress proxy (issue 32). Node's
 * client sends the request (the one judged: parsed, hop-by-hop and Proxy-* fields removed, its
 * body in the framing it was parsed with, `Connection: close`); the response is relayed as it
 * comes, unparsed, through one reused buffer (relay.ts), and the client's connection closes
 * after it. Parsing it again here cost a copy and an allocation per read: downloads ran at 25–40%
 * of direct, as fast as through CONNECT now (bench/sandbox.bench.ts). Nothing on the connection
 * follows that response, so it cannot be mistaken for another's.
 */
export function forwardPlain(
  ctx: PlainForwarding,
  req: IncomingMessage,
  res: ServerResponse,
): void {
  const {decide, log, relaying} = ctx
  const client = req.socket
  // A request pipelined behind one being relayed: the connection closes after that response
  // (the client sends it again on a new one), so this one is not forwarded.
  if (relaying.has(client)) return
  let url: URL
  try {
    url = new URL(req.url ?? '')
  } catch {
    return answer(res, 400, 'a proxy request needs an absolute http:// URL')
  }
  if (url.protocol !== 'http:' || url.username || url.password)
    return answer(res, 400, 'only http:// URLs without credentials (use CONNECT for https)')
  const port = url.port === '' ? 80 : Number(url.port)
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (!decide(host, port, req.method ?? 'GET'))
    return answer(res, 403, `${host}:${port} is not allowed by the permission profile`)
  // The destination answers in HTTP/1.1 (chunked, perhaps), which an HTTP/1.0 client cannot read.
  if (req.httpVersion !== '1.1')
    return answer(res, 505, 'the egress proxy forwards HTTP/1.1 requests only')
  relaying.add(client)
  const headers = endToEndHeaders(req.headers)
  for (const name of Object.keys(headers)) if (name.startsWith('proxy-')) delete headers[name]
  // node:http has answered `100 Continue` already; the destination must not send another.
  delete headers.expect
  // The body goes with the framing node:http parsed it with. Without this, a GET/HEAD/DELETE/
  // OPTIONS body sent chunked (or with a Content-Length that Connection names) would be
  // written unframed, and the destination would read it as further requests nobody judged.
  delete headers['content-length']
  if (req.headers['transfer-encoding'] !== undefined) headers['transfer-encoding'] = 'chunked'
  else if (req.headers['content-length'] !== undefined)
    headers['content-length'] = req.headers['content-length']
  const download = relayTo(client)
  const upstream = connect({host, port, timeout: ctx.connectTimeoutMs, onread: download.onread})
  upstream.once('connect', () => upstream.setTimeout(ctx.idleMs))
  upstream.once('timeout', () => upstream.destroy(new Error('upstream timeout')))
  client.setTimeout(ctx.idleMs, () => client.destroy())
  const failed = (reason: string) => {
    log.info('egress connection failed', {host, port, reason})
    // Nothing of a response relayed yet: the client gets an answer of ours.
    if (download.bytes === 0 && !res.headersSent && !client.destroyed) {
      res.shouldKeepAlive = false
      answer(res, 502, 'the destination could not be reached')
    } else client.destroy()
  }
  upstream.once('end', () => {
    if (download.bytes === 0) failed('the destination closed the connection without answering')
  })
  download.from(upstream)
  const out = request({
    method: req.method,
    path: url.pathname + url.search,
    headers: {...headers, host: url.host},
    // No agent (`agent: false` would make one): this connection, and `Connection: close`.
    createConnection: () => upstream,
  })
  // Node's client never sees the response (onread takes it), so it reports every close as a
  // hang-up: only a destination that could not be reached is an error here.
  out.on('error', () => undefined)
  upstream.on('error', (err) => failed(err.message))
  client.on('close', () => upstream.destroy())
  // Nothing after this request is ever forwarded, so nothing more is read (node:http would
  // otherwise parse pipelined requests and keep every one of them, unanswered, until the
  // connection closes), and the connection closes once the response is sent.
  req.once('end', () => client.pause())
  upstream.once('end', () => client.destroySoon())
  req.pipe(out)
}

/** A JSON error answer of the proxy's own. */
function answer(res: ServerResponse, status: number, text: string): void {
  const body = JSON.stringify({error: text})
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  })
  res.end(body)
}
