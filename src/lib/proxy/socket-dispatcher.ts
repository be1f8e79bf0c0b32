import type {Agent as HttpAgent, ClientRequest, IncomingMessage} from 'node:http'
import {Agent, request} from '../http/node-http.ts'
import type {ForwardRequest, UpstreamDispatcher, UpstreamHandler} from './forward.ts'
import type {UpstreamTimeouts} from './upstream.ts'

/**
 * The hop from the proxy pipeline to a private endpoint of a process this tool started (`run`'s
 * stdio bridge on its unix socket / named pipe), over Node's own HTTP client.
 *
 * Why not undici here: the workload's background process already has Node's HTTP parser for its
 * servers, and undici (its wasm parser, its pools) was the largest single part of that process's
 * memory left (issue 11: bridge RSS ≤ 80 MB). Public targets keep undici (upstream.ts). The
 * handler protocol is undici's, so the forward path (forward.ts) is the same code for both.
 */
export function socketDispatcher(
  socketPath: string,
  timeouts: UpstreamTimeouts,
): UpstreamDispatcher {
  // Idle sockets are closed after 30 s, well before the bridge's 65 s keep-alive, so a request is
  // not written on a socket the server is about to close for idleness.
  const agent = new Agent({keepAlive: true, maxSockets: 128, timeout: 30_000})
  let closed = false
  return {
    dispatch(opts, handler) {
      // As undici's closed Agent: nothing new leaves after close.
      if (closed) handler.onError(codedError('UND_ERR_CLOSED', 'the upstream client is closed'))
      else new SocketExchange(agent, socketPath, timeouts, opts, handler).start()
      return true
    },
    // Called after the proxy's server has drained its requests (closeGracefully): what is still
    // open then (an event stream) is cut, as the proxy's own clients are.
    async close() {
      closed = true
      agent.destroy()
    },
  }
}

class SocketExchange {
  settled = false
  req: ClientRequest | undefined
  res: IncomingMessage | undefined
  timer: NodeJS.Timeout | undefined

  readonly agent: HttpAgent
  readonly socketPath: string
  readonly timeouts: UpstreamTimeouts
  readonly opts: ForwardRequest
  readonly handler: UpstreamHandler

  constructor(
    agent: HttpAgent,
    socketPath: string,
    timeouts: UpstreamTimeouts,
    opts: ForwardRequest,
    handler: UpstreamHandler,
  ) {
    this.agent = agent
    this.socketPath = socketPath
    this.timeouts = timeouts
    this.opts = opts
    this.handler = handler
  }

  start(): void {
    const {opts, handler} = this
    handler.onConnect((err) => this.fail(err ?? abortError()))
    if (this.settled) return
    const body = opts.body
    const headers: Record<string, string | string[]> = {
      ...opts.headers,
      host: new URL(opts.origin).host,
    }
    // Every body is framed explicitly. The client's Transfer-Encoding is hop-by-hop and dropped,
    // and for GET, HEAD, DELETE and OPTIONS node:http would otherwise write the bytes after the
    // head with neither length nor chunking: the bridge would parse them as a second request on
    // the kept-alive socket (smuggled past the pipeline; answers shifted between clients).
    if (body !== null && headers['content-length'] === undefined) {
      if (Buffer.isBuffer(body)) headers['content-length'] = String(body.length)
      else headers['transfer-encoding'] = 'chunked'
    }
    const req = request({
      agent: this.agent,
      socketPath: this.socketPath,
      method: opts.method,
      path: opts.path,
      headers,
    })
    this.req = req
    // No answer head in time (counted from dispatch, upload included): the bound undici's
    // headersTimeout gives toward public targets.
    this.timer = setTimeout(
      () => this.fail(codedError('UND_ERR_HEADERS_TIMEOUT', 'upstream headers timeout')),
      this.timeouts.headersMs,
    )
    req.on('error', (err) => this.fail(err))
    req.on('response', (res) => this.onResponse(res))
    // Closed with neither an answer nor an error (an upgrade answer, which the bridge never sends).
    req.on('close', () => {
      if (!this.res) this.fail(codedError('ECONNRESET', 'upstream closed without an answer'))
    })
    if (body === null) req.end()
    else if (Buffer.isBuffer(body)) req.end(body)
    else body.pipe(req)
  }

  onResponse(res: IncomingMessage): void {
    clearTimeout(this.timer)
    this.res = res
    if (this.settled) {
      res.destroy()
      return
    }
    if (this.timeouts.bodyMs > 0)
      res.setTimeout(this.timeouts.bodyMs, () =>
        this.fail(codedError('UND_ERR_BODY_TIMEOUT', 'upstream body timeout')),
      )
    const resume = () => res.resume()
    if (this.handler.onHeaders(res.statusCode ?? 502, res.rawHeaders, resume) === false) res.pause()
    res.on('data', (chunk: Buffer) => {
      if (this.settled) return
      if (this.handler.onData(chunk) === false) res.pause()
    })
    res.on('end', () => {
      if (this.settled) return
      this.settled = true
      this.handler.onComplete()
    })
    res.on('error', (err) => this.fail(err))
    // A response cut before its end (the server died mid-stream) emits 'close' without 'end'.
    res.on('close', () => {
      if (!res.complete) this.fail(codedError('ECONNRESET', 'upstream closed the response'))
    })
  }

  fail(err: Error): void {
    if (this.settled) return
    this.settled = true
    clearTimeout(this.timer)
    this.res?.destroy()
    this.req?.destroy()
    // A streamed upload nobody will read any more must not hold the client's request open.
    const body = this.opts.body
    if (body !== null && !Buffer.isBuffer(body)) body.destroy()
    this.handler.onError(err)
  }
}

function codedError(code: string, message: string): Error {
  return Object.assign(new Error(message), {code})
}

function abortError(): Error {
  return codedError('UND_ERR_ABORTED', 'request aborted')
}
