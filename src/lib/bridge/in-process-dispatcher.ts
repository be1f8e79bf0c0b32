import type {IncomingMessage, ServerResponse} from 'node:http'
import {Readable, Writable} from 'node:stream'
import type {ForwardRequest, UpstreamDispatcher, UpstreamHandler} from '../proxy/forward.ts'

/**
 * The hop from a workload's front to a bridge in the same process, without a socket (issue 37:
 * the gateway). The front's forward path speaks undici's handler protocol to any dispatcher
 * (socket-dispatcher.ts is the one over a private socket); this one hands each request to the
 * bridge's request listener as a request stream and a response the handler receives as it is
 * written — one HTTP client and one HTTP server less per call. The front still does everything a
 * front does (auth, Cedar, audit, limits, the principal field); the bridge sees what it would see
 * over its socket: method, path, headers, body.
 */

export type RequestListener = (req: IncomingMessage, res: ServerResponse) => void

/** The front's bound on the answer head (DEFAULT_TIMEOUTS.headersMs in upstream.ts). */
const HEADERS_TIMEOUT_MS = 300_000

export function inProcessDispatcher(listener: RequestListener): UpstreamDispatcher {
  let closed = false
  const open = new Set<VirtualResponse>()
  return {
    dispatch(opts, handler) {
      if (closed) {
        handler.onError(
          Object.assign(new Error('the upstream is closed'), {code: 'UND_ERR_CLOSED'}),
        )
        return true
      }
      const req = virtualRequest(opts)
      const res = new VirtualResponse(handler, req, () => open.delete(res))
      open.add(res)
      handler.onConnect((err) => res.abort(err))
      if (res.destroyed) return true
      try {
        listener(req, res as unknown as ServerResponse)
      } catch (err) {
        // The bridge's listener answers its own errors; whatever escapes ends this exchange only.
        res.abort(err as Error)
      }
      return true
    },
    async close() {
      closed = true
      for (const res of open) res.abort(new Error('the workload stopped'))
    },
  }
}

function virtualRequest(opts: ForwardRequest): IncomingMessage {
  const body = opts.body
  const stream: Readable =
    body === null ? Readable.from([]) : Buffer.isBuffer(body) ? Readable.from([body]) : body
  const headers: Record<string, string | string[]> = {}
  for (const [name, value] of Object.entries(opts.headers)) headers[name.toLowerCase()] = value
  if (Buffer.isBuffer(body)) headers['content-length'] = String(body.length)
  return Object.assign(stream, {method: opts.method, url: opts.path, headers}) as IncomingMessage
}

/**
 * What the bridge writes its answer to: the parts of ServerResponse it uses (writeHead, setHeader,
 * flushHeaders, write, end, headersSent, writableLength, 'drain', 'close', destroy), each passed to
 * the front's handler at once. A handler that cannot take more (its client is slow) holds the write
 * callback, so writableLength grows and the bridge's buffer budget sees it, as over a socket.
 */
class VirtualResponse extends Writable {
  statusCode = 200
  headersSent = false
  readonly #headers = new Map<string, string | string[]>()
  readonly #handler: UpstreamHandler
  readonly #req: Readable
  readonly #done: () => void
  #held: (() => void) | undefined
  #settled = false
  /** No head this long after the request (a bridge stuck before answering): the front's bound. */
  readonly #headTimer: NodeJS.Timeout

  constructor(handler: UpstreamHandler, req: Readable, done: () => void) {
    super()
    this.#handler = handler
    this.#req = req
    this.#done = done
    this.#headTimer = setTimeout(
      () =>
        this.abort(
          Object.assign(new Error('upstream headers timeout'), {code: 'UND_ERR_HEADERS_TIMEOUT'}),
        ),
      HEADERS_TIMEOUT_MS,
    )
    this.once('close', () => {
      clearTimeout(this.#headTimer)
      this.#done()
      // Closed before its end: what a socket would report as a reset.
      if (!this.#settled)
        this.#fail(Object.assign(new Error('upstream closed the response'), {code: 'ECONNRESET'}))
    })
  }

  setHeader(name: string, value: string | number | readonly string[]): this {
    this.#headers.set(
      name.toLowerCase(),
      typeof value === 'number' ? String(value) : (value as string | string[]),
    )
    return this
  }

  getHeader(name: string): string | string[] | undefined {
    return this.#headers.get(name.toLowerCase())
  }

  writeHead(status: number, headers?: Record<string, string | number | readonly string[]>): this {
    this.statusCode = status
    for (const [name, value] of Object.entries(headers ?? {})) this.setHeader(name, value)
    this.flushHeaders()
    return this
  }

  flushHeaders(): void {
    if (this.headersSent || this.#settled) return
    this.headersSent = true
    clearTimeout(this.#headTimer)
    const raw: string[] = []
    for (const [name, value] of this.#headers)
      for (const v of Array.isArray(value) ? value : [value]) raw.push(name, v)
    const resume = () => {
      const held = this.#held
      this.#held = undefined
      held?.()
    }
    this.#handler.onHeaders(this.statusCode, raw, resume)
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, callback: (err?: Error) => void): void {
    this.flushHeaders()
    if (this.#settled) return callback()
    if (this.#handler.onData(chunk) === false) this.#held = () => callback()
    else callback()
  }

  override _final(callback: (err?: Error) => void): void {
    this.flushHeaders()
    if (!this.#settled) {
      this.#settled = true
      // Answered without reading the whole body (404, 415…): the rest is read and dropped, or the
      // client's connection would wait for a reader that never comes. The front bounds its size.
      if (!this.#req.readableEnded) this.#req.resume()
      this.#handler.onComplete()
    }
    callback()
  }

  /** The front gave up (its client went away, a timeout): the bridge sees its response closed. */
  abort(err?: Error): void {
    this.#fail(err ?? Object.assign(new Error('request aborted'), {code: 'UND_ERR_ABORTED'}))
    this.destroy()
  }

  #fail(err: Error): void {
    if (this.#settled) return
    this.#settled = true
    clearTimeout(this.#headTimer)
    // A body still coming belongs to an exchange that is over (socket-dispatcher.ts does the same).
    this.#req.destroy()
    this.#handler.onError(err)
  }
}
