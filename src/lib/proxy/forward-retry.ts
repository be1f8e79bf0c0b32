import type {IncomingMessage, ServerResponse} from 'node:http'
import {Duplex, pipeline, Writable, type Readable} from 'node:stream'
import {isToolgateError} from '../errors.ts'
import type {Logger} from '../log/logger.ts'
import {
  CREDENTIALS_UNAVAILABLE,
  RETRY_LATER,
  TOKEN_EXCHANGE_FAILED,
  answer,
  answerTooLarge,
} from './answer.ts'
import {buildCredentials, type CredentialSources, type Credentials} from './credentials.ts'
import {forwardRequest, type ForwardCall, type RawHeaders} from './forward.ts'
import {
  endToEndRawHeaders,
  flatHeaderRecord,
  flatHeaderValues,
  withoutFlatHeader,
} from './hop-by-hop.ts'
import {logPath} from './log-path.ts'
import type {ResponseRewriter} from './types.ts'
import type {GuardTicket} from '../sessions/session-guard.ts'
import {isConnectFailure, type Upstream} from './upstream.ts'

/** Per request: whether the client left, the signal for token calls, the upstream call in flight. */
export interface InFlight {
  gone: boolean
  controller: AbortController | undefined
  call: ForwardCall | undefined
}

/** Tracks the client's departure: once it leaves, token calls and the upstream request are cancelled (abort both ways). */
export function trackClient(res: ServerResponse, withController: boolean): InFlight {
  const state: InFlight = {
    gone: false,
    controller: withController ? new AbortController() : undefined,
    call: undefined,
  }
  const leave = () => {
    if (res.writableFinished) return
    state.gone = true
    state.controller?.abort()
    state.call?.cancel(new Error('client closed the connection'))
  }
  // The client may already have left while it was being authenticated or its body read: 'close'
  // has then fired before this listener existed, so look at the state too.
  if (res.destroyed) leave()
  else res.once('close', leave)
  return state
}

export interface Forwarding {
  headers: Record<string, string | string[]>
  /** The outgoing token the credentials in `headers` were built from. */
  outgoing: string | undefined
  body: Buffer | Readable | undefined
  state: InFlight
  rewrite: ResponseRewriter | undefined
  /** Whether an upstream 401 may still be retried once with refreshed credentials. */
  retry: boolean
  /** The session guard's view of this exchange (sessions/session-guard.ts). */
  ticket?: GuardTicket | undefined
}

export type Forward = (req: IncomingMessage, res: ServerResponse, f: Forwarding) => Promise<void>

/**
 * Step 7 of the pipeline: the streaming forward, and the one retry of contract §3 when the target
 * answers 401 and the token source can refresh (the body must be replayable, i.e. a Buffer).
 */
export function createForwarder(deps: {
  upstream: Upstream
  credentials: CredentialSources
  log: Logger
}): Forward {
  const {upstream, credentials: sources, log} = deps
  const origin = upstream.target.origin
  const refresher = sources.upstreamToken?.onUnauthorized ? sources.upstreamToken : undefined

  // The first answer of the target tells whether the paths line up: a 404 then is most often a
  // --target-uri whose path does not end where the server's endpoint is (logged once).
  let first = true
  const forward: Forward = async (req, res, f) => {
    const rawUrl = req.url ?? '/'
    let retry = false
    const call = forwardRequest(
      upstream.dispatcher,
      {
        origin,
        path: upstream.pathFor(rawUrl),
        method: req.method ?? 'GET',
        headers: f.headers,
        body: f.body ?? null,
      },
      (statusCode, rawHeaders) => {
        if (statusCode === 401 && f.retry && refresher && !(f.body && !Buffer.isBuffer(f.body))) {
          retry = true
          return discard()
        }
        if (first) {
          first = false
          if (statusCode === 404)
            log.warn(
              'the target answered 404 to the first request: check that --target-uri and the client path together name the MCP endpoint (the client path is appended to the target URI; a target ending in /mcp or /sse is taken as that endpoint)',
              {path: logPath(rawUrl), forwardedTo: upstream.pathFor(logPath(rawUrl))},
            )
        }
        const refusal = f.ticket?.onHead(statusCode, rawHeaders)
        if (refusal) {
          answer(res, refusal.status, refusal.body, refusal.headers)
          return discard()
        }
        return responseSink(res, statusCode, rawHeaders, f.rewrite)
      },
      f.ticket,
    )
    f.state.call = call
    if (f.state.gone) call.cancel(new Error('client closed the connection'))
    try {
      await call.done
    } catch (err) {
      failed(res, f, call, err as Error, logPath(rawUrl))
      return
    }
    if (retry && refresher) {
      const fresh = await refreshed(req, res, f)
      if (fresh)
        await forward(req, res, {
          ...f,
          headers: {...f.headers, ...fresh.headers},
          outgoing: fresh.outgoing,
          retry: false,
        })
    }
  }

  /**
   * Tells the source which of ITS tokens was refused (with token exchange the target saw an
   * exchanged one, possibly in another header), then rebuilds every credential from the fresh one.
   * undefined: the client has its answer (503, or 401 when the new exchange fails).
   */
  async function refreshed(
    req: IncomingMessage,
    res: ServerResponse,
    f: Forwarding,
  ): Promise<Credentials | undefined> {
    const signal = f.state.controller?.signal
    const fresh = await refresher!.onUnauthorized!(f.outgoing ?? '', signal).catch(() => undefined)
    if (fresh === undefined) {
      answer(res, 503, CREDENTIALS_UNAVAILABLE, RETRY_LATER)
      return undefined
    }
    try {
      return await buildCredentials(sources, req.headers.authorization, {signal, outgoing: fresh})
    } catch (err) {
      if (isToolgateError(err, 'ERR_TOKEN_EXCHANGE')) answer(res, 401, TOKEN_EXCHANGE_FAILED)
      else answer(res, 503, CREDENTIALS_UNAVAILABLE, RETRY_LATER)
      return undefined
    }
  }

  function failed(
    res: ServerResponse,
    f: Forwarding,
    call: ForwardCall,
    err: Error,
    path: string,
  ): void {
    const sink = call.sink()
    if (sink && sink !== res) sink.destroy()
    if (f.state.gone && res.destroyed) return // the client left; nothing to answer
    if (isToolgateError(err, 'ERR_BODY_TOO_LARGE')) {
      log.info('request refused', {reason: 'body too large', path})
      answerTooLarge(res, err.message)
      return
    }
    if (res.headersSent) {
      // The target failed mid-stream: end the client's response too (abort both ways).
      log.warn('upstream stream failed', {path, reason: err.message})
      res.destroy()
      return
    }
    log.warn('upstream request failed', {
      path,
      reason: err.message,
      code: (err as {code?: string}).code,
    })
    answer(
      res,
      502,
      JSON.stringify({
        error: isConnectFailure(err) ? 'upstream unavailable' : 'upstream request failed',
      }),
    )
  }

  return forward
}

/**
 * Writes the response head and returns where the body goes: the client response, or a rewriting
 * stream in front of it. A rewritten body is plain and of another length, so `content-encoding`
 * and `content-length` go (a coded body is replaced by the rewriter, never decoded).
 */
function responseSink(
  res: ServerResponse,
  statusCode: number,
  rawHeaders: RawHeaders,
  rewrite: ResponseRewriter | undefined,
): Writable {
  let h = endToEndRawHeaders(rawHeaders)
  const types = flatHeaderValues(h, 'content-type')
  const transform = rewrite?.(types.length === 1 ? types[0] : undefined, flatHeaderRecord(h))
  if (transform) h = withoutFlatHeader(withoutFlatHeader(h, 'content-length'), 'content-encoding')
  res.writeHead(statusCode, h)
  // SSE: the head must leave now, the first event may be minutes away.
  if (types.join(',').startsWith('text/event-stream')) res.flushHeaders()
  if (!transform) return res
  const duplex = Duplex.fromWeb(transform as unknown as Parameters<typeof Duplex.fromWeb>[0])
  // pipeline, not pipe: a rewriter that refuses the body (coded, not UTF-8, malformed) errors its
  // stream on purpose; pipe() would leave that error unhandled and crash the process. pipeline cuts
  // the client response instead (the refusal is logged by the rewriter), and tears the rewriter
  // down when the client leaves.
  pipeline(duplex, res, () => {})
  return duplex as Writable
}

/** Swallows a response we are about to retry (the 401 of a stale upstream token). */
function discard(): Writable {
  return new Writable({
    write(_chunk, _enc, cb) {
      cb()
    },
  })
}
