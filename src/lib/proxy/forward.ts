import type {Readable, Writable} from 'node:stream'
import {countForwarded} from './young-gc.ts'

export interface ForwardRequest {
  origin: string
  path: string
  method: string
  headers: Record<string, string | string[]>
  body: Buffer | Readable | null
}

/** Raw response header names and values in wire order: buffers from undici, strings from node:http. */
export type RawHeaders = readonly (Buffer | string)[]

/** undici's dispatch-handler protocol, the subset the forward path uses. */
export interface UpstreamHandler {
  onConnect(abort: (err?: Error) => void): void
  /** false: pause the body until `resume` is called. */
  onHeaders(statusCode: number, rawHeaders: RawHeaders, resume: () => void): boolean
  /** false: pause until the `resume` given to onHeaders is called. */
  onData(chunk: Buffer): boolean
  onComplete(): void
  onError(err: Error): void
}

/**
 * What the pipeline forwards through: an undici Agent toward public targets (upstream.ts), or
 * node:http on a private socket of a process this tool started (socket-dispatcher.ts).
 */
export interface UpstreamDispatcher {
  dispatch(opts: ForwardRequest, handler: UpstreamHandler): boolean
  close(): Promise<void>
}

/**
 * Receives the response head (status ≥ 200, raw header names and values as on the wire) and
 * returns where the body goes: the client response, a rewriting stream, or a sink that discards.
 */
export type OnResponseHead = (statusCode: number, rawHeaders: RawHeaders) => Writable

/**
 * One forwarded request as a plain dispatch handler (undici's protocol, which the node:http
 * socket dispatcher speaks too).
 *
 * Why not `dispatcher.stream()`: per request it adds an AsyncResource, an `AbortSignal`
 * subscription and `stream.finished()` listeners on the client response; on small JSON-RPC
 * calls that was a measurable share of the proxy's CPU (bench/proxy.bench.ts). The handler keeps
 * the same semantics: body written as it arrives, backpressure both ways (a `false` from
 * `write()` pauses the upstream socket until `drain`), abort on client departure, errors surfaced
 * to the caller once.
 */
class ForwardHandler implements UpstreamHandler {
  settled = false
  sink: Writable | undefined = undefined
  resumeUpstream: (() => void) | undefined = undefined
  waitingDrain = false
  abortUpstream: ((reason?: Error) => void) | undefined = undefined
  reason: Error | undefined = undefined
  onHead: OnResponseHead
  resolve: () => void
  reject: (err: Error) => void
  /** Sees the body bytes too (the session guard, on a legacy SSE stream); read per chunk. */
  watcher: BodyWatcher | undefined

  constructor(
    onHead: OnResponseHead,
    resolve: () => void,
    reject: (err: Error) => void,
    watcher: BodyWatcher | undefined,
  ) {
    this.onHead = onHead
    this.resolve = resolve
    this.reject = reject
    this.watcher = watcher
  }

  /** Cancels the upstream request (client gone, request body failed); the caller sees `reason`. */
  cancel(reason: Error): void {
    if (this.abortUpstream) this.abortUpstream(reason)
    else this.reason ??= reason
  }

  onConnect(abort: (err?: Error) => void): void {
    if (this.reason) abort(this.reason)
    else this.abortUpstream = abort
  }

  onHeaders(statusCode: number, rawHeaders: RawHeaders, resume: () => void): boolean {
    if (statusCode < 200 || this.settled) return true // 1xx interim responses are not forwarded
    this.resumeUpstream = resume
    let sink: Writable
    try {
      sink = this.onHead(statusCode, rawHeaders)
    } catch (err) {
      this.cancel(err as Error)
      return true
    }
    this.sink = sink
    return sink.writableNeedDrain !== true
  }

  onData(chunk: Buffer): boolean {
    const sink = this.sink
    if (!sink) return true
    if (sink.destroyed) {
      // Nobody will read what follows (client gone, rewriter refused the body): stop the upstream
      // rather than drain a possibly endless stream into nothing.
      this.cancel(new Error('response sink closed'))
      return false
    }
    countForwarded(chunk.length)
    this.watcher?.observe?.(chunk)
    if (sink.write(chunk)) return true
    if (!this.waitingDrain) {
      this.waitingDrain = true
      sink.once('drain', () => {
        this.waitingDrain = false
        this.resumeUpstream?.()
      })
    }
    return false
  }

  onComplete(): void {
    this.sink?.end()
    this.finish()
  }

  onError(err: Error): void {
    // The caller decides what the client sees (502, 413, or a cut stream); only a sink of our own
    // (rewriting or discarding stream) is torn down here.
    this.fail(this.reason ?? err)
  }

  fail(err: Error): void {
    if (this.settled) return
    this.settled = true
    this.reject(err)
  }

  finish(): void {
    if (this.settled) return
    this.settled = true
    this.resolve()
  }
}

export interface ForwardCall {
  /** Settles when the response body has been handed to the sink (resolve) or the exchange failed. */
  done: Promise<void>
  cancel(reason: Error): void
  /** The sink `onHead` returned, once the head arrived. */
  sink(): Writable | undefined
}

/** Something that may want to see a response body as it passes (set once the head arrived). */
export interface BodyWatcher {
  observe: ((chunk: Buffer) => void) | undefined
}

export function forwardRequest(
  dispatcher: UpstreamDispatcher,
  request: ForwardRequest,
  onHead: OnResponseHead,
  watcher?: BodyWatcher,
): ForwardCall {
  let handler!: ForwardHandler
  const done = new Promise<void>((resolve, reject) => {
    handler = new ForwardHandler(onHead, resolve, reject, watcher)
  })
  const body = request.body
  if (body && !Buffer.isBuffer(body)) {
    // A failing request body (e.g. the byte limiter past the limit) fails the call with its own
    // error, so the caller can answer 413 rather than a generic 502.
    body.once('error', (err: Error) => {
      handler.fail(err)
      handler.cancel(err)
    })
  }
  try {
    dispatcher.dispatch(
      {
        origin: request.origin,
        path: request.path,
        method: request.method,
        headers: request.headers,
        body,
      },
      handler,
    )
  } catch (err) {
    handler.fail(err as Error)
  }
  return {done, cancel: (reason) => handler.cancel(reason), sink: () => handler.sink}
}
