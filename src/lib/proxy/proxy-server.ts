import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'
import {Duplex, Writable, type Readable} from 'node:stream'
import {createAuthenticator} from '../auth/index.ts'
import type {BearerAuthenticator, Principal} from '../auth/types.ts'
import {isToolgateError} from '../errors.ts'
import {closeGracefully, listen, urlOf} from '../http/listen.ts'
import {readBody} from '../http/respond.ts'
import type {Logger} from '../log/logger.ts'
import type {TokenExchanger} from '../token-exchange/exchanger.ts'
import {bodyTooLarge, byteLimiter, effectiveBodyLimit, readDeclaredBody} from './body-limit.ts'
import {forwardRequest, type ForwardCall} from './forward.ts'
import type {InjectedHeader} from './forward-headers.ts'
import {endToEndRawHeaders, requestHeadersForTarget, flatHeaderRecord, flatHeaderValues, withoutFlatHeader} from './hop-by-hop.ts'
import {buildCredentials, type Credentials} from './credentials.ts'
import {
  incomingAuthEnabled,
  oauthConfigFromOidc,
  unauthorizedAnswer,
  type IncomingOidcOptions,
} from './incoming-auth.ts'
import {logPath} from './log-path.ts'
import {callJsonRpc} from './mcp-call.ts'
import {isLoopbackHost} from '../http/loopback.ts'
import {ORIGIN_REJECTED_BODY, createOriginPolicy, loopbackOrigins, type OriginPolicy} from './origin.ts'
import type {InterceptDecision, RequestInterceptor, ResponseRewriter, UpstreamTokenSource} from './types.ts'
import {DEFAULT_TIMEOUTS, createUpstream, isConnectFailure, type UpstreamTimeouts} from './upstream.ts'
import {CORS_HEADERS, buildMetadata, metadataPaths} from './well-known.ts'

export interface ProxyConfig {
  name: string
  targetUri: URL
  host: string
  /** 0 = a free port. */
  port: number
  /** Normalised origins; undefined derives the loopback default (or no check on a non-loopback bind). */
  allowedOrigins?: string[]
  /** Bytes; 0 = 8 MiB. */
  maxRequestBodySize: number
  resourceUrl?: string
  oidc?: IncomingOidcOptions
  upstreamToken?: UpstreamTokenSource
  tokenExchange?: TokenExchanger
  forwardHeaders: InjectedHeader[]
  interceptor?: RequestInterceptor
  /** Grace period for in-flight requests on close. */
  drainMs?: number
  timeouts?: UpstreamTimeouts
}

export interface ProxyDeps {
  logger: Logger
  /** Injected validator (tests, `run`); default: the shared one built from `oidc`. */
  authenticator?: BearerAuthenticator
}

export interface RunningProxy {
  server: Server
  url: string
  port: number
  close(): Promise<void>
}

/** Per request: whether the client left, the signal for token calls, the upstream call in flight. */
interface InFlight {
  gone: boolean
  controller: AbortController | undefined
  call: ForwardCall | undefined
}

/** Bodies up to this size are read before forwarding (see `mustBuffer`). */
const SMALL_BODY = 64 * 1024

const JSON_HEADERS = {'content-type': 'application/json', 'x-content-type-options': 'nosniff'}

function answer(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.destroy()
    return
  }
  res.writeHead(status, {...JSON_HEADERS, 'content-length': String(Buffer.byteLength(body)), ...headers})
  res.end(body)
}

/**
 * Starts `toolgate proxy`: the pipeline of contract §3, outermost first — body limit → Origin →
 * incoming auth → interceptor (authz) → token exchange / outgoing token → header injection →
 * streaming forward.
 */
export async function startProxy(config: ProxyConfig, deps: ProxyDeps): Promise<RunningProxy> {
  const log = deps.logger.child({proxy: config.name})
  const limit = effectiveBodyLimit(config.maxRequestBodySize)
  const upstream = createUpstream(config.targetUri, config.timeouts ?? DEFAULT_TIMEOUTS)
  const origin = config.targetUri.origin
  const authOn = incomingAuthEnabled(config.oidc)
  const authenticator =
    deps.authenticator ?? (authOn ? createAuthenticator(oauthConfigFromOidc(config.oidc!, config.resourceUrl), {logger: log, configPath: '--oidc-* flags'}) : undefined)
  const outgoingAuth = Boolean(config.upstreamToken || config.tokenExchange)
  // Fields the proxy replaces or owns toward the target.
  const drop = new Set(['host'])
  if (outgoingAuth) drop.add('authorization')
  for (const h of config.forwardHeaders) drop.add(h.name)
  const exchangeHeader = config.tokenExchange?.config.headerName?.toLowerCase()
  if (exchangeHeader) drop.add(exchangeHeader)

  const wellKnown =
    authOn && config.resourceUrl
      ? {
          paths: metadataPaths(config.resourceUrl),
          body: JSON.stringify(
            buildMetadata({resourceUrl: config.resourceUrl, issuer: config.oidc?.issuer, scopes: config.oidc?.scopes ?? ['openid']}),
          ),
        }
      : undefined

  let originPolicy: OriginPolicy = createOriginPolicy(config.allowedOrigins)

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawUrl = req.url ?? '/'
    const method = req.method ?? 'GET'
    const path = logPath(rawUrl)

    if (wellKnown) {
      if (wellKnown.paths.has(path)) {
        if (method === 'OPTIONS') {
          res.writeHead(204, CORS_HEADERS)
          res.end()
        } else if (method === 'GET' || method === 'HEAD') {
          answer(res, 200, wellKnown.body, CORS_HEADERS)
        } else {
          answer(res, 405, '{"error":"method not allowed"}', {...CORS_HEADERS, allow: 'GET, HEAD, OPTIONS'})
        }
        return
      }
    }

    // 1. Body limit: a declared length over the limit is refused before anything is forwarded.
    const declared = req.headers['content-length']
    if (declared !== undefined && Number(declared) > limit) {
      log.info('request refused', {reason: 'body too large', path})
      res.setHeader('connection', 'close')
      answer(res, 413, JSON.stringify({error: bodyTooLarge(limit).message}))
      return
    }

    // 2. Origin (DNS-rebinding defence).
    const origins = req.headers.origin === undefined ? undefined : req.headersDistinct.origin
    const decision = originPolicy.check(origins)
    if (!decision.ok) {
      log.info('request refused', {reason: decision.reason, path})
      answer(res, 403, ORIGIN_REJECTED_BODY)
      return
    }

    // 3. Incoming authentication; nothing reaches the target on failure.
    let principal: Principal | undefined
    if (authenticator) {
      const auth = req.headers.authorization === undefined ? undefined : req.headersDistinct.authorization
      const outcome = await authenticator.authenticate(auth && auth.length === 1 ? auth[0] : auth)
      if (!outcome.ok) {
        log.info('request refused', {reason: outcome.error, path})
        const a = unauthorizedAnswer(config.oidc!, config.resourceUrl, outcome.error, outcome.description)
        answer(res, 401, a.body, a.headers)
        return
      }
      principal = outcome.principal
    }

    const hasBody = declared !== undefined ? declared !== '0' : req.headers['transfer-encoding'] !== undefined
    // A body is read whole only when something must see it: an interceptor (authz needs the
    // JSON-RPC message) or a refreshing token source that may need to replay it after a 401.
    // Small declared bodies (the usual JSON-RPC message) are read whole too: handing undici one
    // buffer lets it send head and body in one write, instead of a head write followed by a body
    // write that can stall on Nagle/delayed-ACK interplay at the target.
    const mustSee = Boolean(config.interceptor || config.upstreamToken?.onUnauthorized)
    const small = declared !== undefined && Number(declared) <= SMALL_BODY
    let body: Buffer | Readable | undefined
    if (hasBody && (mustSee || small)) {
      try {
        body = small ? await readDeclaredBody(req, limit) : await readBody(req, limit)
      } catch (err) {
        if (isToolgateError(err, 'ERR_BODY_TOO_LARGE')) {
          res.setHeader('connection', 'close')
          answer(res, 413, JSON.stringify({error: err.message}))
          return
        }
        throw err
      }
    } else if (hasBody) {
      body = req.pipe(byteLimiter(limit))
    }

    const headers = requestHeadersForTarget(req.headers, drop)
    // The interceptor's rewriters read the body as text: ask for it uncoded (RFC 9110 §12.5.3).
    if (config.interceptor) headers['accept-encoding'] = 'identity'
    const clientAuthorization = req.headers.authorization
    const credentials = (signal?: AbortSignal) => buildCredentials(config, clientAuthorization, {signal})

    // 4. Interceptor (authorization), with the whole body.
    let intercept: InterceptDecision | undefined
    if (config.interceptor) {
      intercept = await config.interceptor.intercept(
        {method, path: rawUrl, headers: req.headers, body: (body as Buffer | undefined) ?? Buffer.alloc(0), principal},
        async (jsonRpcBody) => {
          const session: Record<string, string> = {}
          for (const name of ['mcp-session-id', 'mcp-protocol-version']) {
            const v = req.headers[name]
            if (typeof v === 'string') session[name] = v
          }
          // Without outgoing auth the target sees the client's own Authorization on forwarded
          // requests; it must see it on this call too, or a target that checks it answers 401.
          if (!outgoingAuth && typeof headers.authorization === 'string') session.authorization = headers.authorization
          return callJsonRpc({
            dispatcher: upstream.dispatcher,
            origin,
            path: upstream.pathFor(rawUrl),
            headers: {...session, ...(await credentials()).headers},
            body: jsonRpcBody,
          })
        },
      )
      if (intercept.action === 'answer') {
        answer(res, intercept.answer.status, intercept.answer.body, intercept.answer.headers)
        return
      }
    }

    // 5./6. Outgoing credentials and injected headers.
    const state: InFlight = {gone: false, controller: outgoingAuth ? new AbortController() : undefined, call: undefined}
    // Client went away before the response finished: cancel the upstream request (abort both ways).
    res.once('close', () => {
      if (res.writableFinished) return
      state.gone = true
      state.controller?.abort()
      state.call?.cancel(new Error('client closed the connection'))
    })
    let outgoing: string | undefined
    if (outgoingAuth) {
      try {
        const creds = await credentials(state.controller!.signal)
        Object.assign(headers, creds.headers)
        outgoing = creds.outgoing
      } catch (err) {
        if (isToolgateError(err, 'ERR_TOKEN_EXCHANGE')) {
          answer(res, 401, '{"error":"Token exchange failed"}')
        } else {
          log.warn('no upstream token', {reason: (err as Error).message})
          answer(res, 503, '{"error":"upstream credentials unavailable"}', {'retry-after': '5'})
        }
        return
      }
    } else {
      // No token to fetch: the injected headers alone, without an await on the hot path.
      for (const h of config.forwardHeaders) headers[h.name] = h.value
    }

    // 7. Forward, streaming.
    await forward(req, res, {headers, outgoing, body, state, rewrite: intercept?.action === 'forward' ? intercept.rewriteResponse : undefined, retry: true})
  }

  async function forward(
    req: IncomingMessage,
    res: ServerResponse,
    f: {
      headers: Record<string, string | string[]>
      /** The outgoing token the credentials in `headers` were built from. */
      outgoing: string | undefined
      body: Buffer | Readable | undefined
      state: InFlight
      rewrite: ResponseRewriter | undefined
      retry: boolean
    },
  ): Promise<void> {
    const rawUrl = req.url ?? '/'
    let retryWith: string | undefined
    const call = forwardRequest(
      upstream.dispatcher,
      {origin, path: upstream.pathFor(rawUrl), method: req.method ?? 'GET', headers: f.headers, body: f.body ?? null},
      (statusCode, rawHeaders) => {
        if (statusCode === 401 && f.retry && config.upstreamToken?.onUnauthorized && !(f.body && !Buffer.isBuffer(f.body))) {
          retryWith = ''
          return discard()
        }
        let h = endToEndRawHeaders(rawHeaders)
        const types = flatHeaderValues(h, 'content-type')
        const transform = f.rewrite?.(types.length === 1 ? types[0] : undefined, flatHeaderRecord(h))
        // The rewritten body is plain and of another length (a coded body is replaced, never decoded).
        if (transform) h = withoutFlatHeader(withoutFlatHeader(h, 'content-length'), 'content-encoding')
        res.writeHead(statusCode, h)
        // SSE: the head must leave now, the first event may be minutes away.
        if (types.join(',').startsWith('text/event-stream')) res.flushHeaders()
        if (!transform) return res
        const duplex = Duplex.fromWeb(transform as unknown as Parameters<typeof Duplex.fromWeb>[0])
        duplex.pipe(res)
        res.once('close', () => duplex.destroy())
        return duplex as Writable
      },
    )
    f.state.call = call
    if (f.state.gone) call.cancel(new Error('client closed the connection'))
    try {
      await call.done
    } catch (err) {
      const sink = call.sink()
      if (sink && sink !== res) sink.destroy()
      if (f.state.gone && res.destroyed) return // the client left; nothing to answer
      if (isToolgateError(err, 'ERR_BODY_TOO_LARGE')) {
        log.info('request refused', {reason: 'body too large', path: logPath(rawUrl)})
        res.setHeader('connection', 'close')
        answer(res, 413, JSON.stringify({error: err.message}))
        return
      }
      if (res.headersSent) {
        // The target failed mid-stream: end the client's response too (abort both ways).
        log.warn('upstream stream failed', {path: logPath(rawUrl), reason: (err as Error).message})
        res.destroy()
        return
      }
      log.warn('upstream request failed', {path: logPath(rawUrl), reason: (err as Error).message, code: (err as {code?: string}).code})
      const what = isConnectFailure(err) ? 'upstream unavailable' : 'upstream request failed'
      answer(res, 502, JSON.stringify({error: what}))
      return
    }
    if (retryWith !== undefined && config.upstreamToken?.onUnauthorized) {
      // Tell the source which of ITS tokens was refused (with token exchange the target saw an
      // exchanged one, possibly in another header), then rebuild every credential from the fresh one.
      const fresh = await config.upstreamToken.onUnauthorized(f.outgoing ?? '', f.state.controller?.signal).catch(() => undefined)
      if (fresh === undefined) {
        answer(res, 503, '{"error":"upstream credentials unavailable"}', {'retry-after': '5'})
        return
      }
      let creds: Credentials
      try {
        creds = await buildCredentials(config, req.headers.authorization, {signal: f.state.controller?.signal, outgoing: fresh})
      } catch (err) {
        if (isToolgateError(err, 'ERR_TOKEN_EXCHANGE')) answer(res, 401, '{"error":"Token exchange failed"}')
        else answer(res, 503, '{"error":"upstream credentials unavailable"}', {'retry-after': '5'})
        return
      }
      await forward(req, res, {...f, headers: {...f.headers, ...creds.headers}, outgoing: creds.outgoing, retry: false})
    }
  }

  const server = createServer({requestTimeout: 0, keepAliveTimeout: 65_000}, (req, res) => {
    handle(req, res).catch((err) => {
      log.error('request failed', {path: logPath(req.url), reason: (err as Error).message})
      answer(res, 500, '{"error":"internal server error"}')
    })
  })
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n')
    else socket.destroy()
  })

  let info: AddressInfo
  try {
    info = await listen(server, {host: config.host, port: config.port}, '--port')
  } catch (err) {
    await upstream.close()
    throw err
  }
  if (config.allowedOrigins === undefined) {
    if (isLoopbackHost(config.host)) {
      originPolicy = createOriginPolicy(loopbackOrigins(info.port))
    } else {
      log.warn('listening on a non-loopback address without --allowed-origins: Origin is not checked', {host: config.host})
    }
  }

  let closing: Promise<void> | undefined
  return {
    server,
    url: urlOf(info),
    port: info.port,
    close() {
      closing ??= (async () => {
        await closeGracefully(server, config.drainMs ?? 10_000)
        await upstream.close().catch(() => undefined)
        await authenticator?.close().catch(() => undefined)
        await config.upstreamToken?.close?.().catch(() => undefined)
        await config.tokenExchange?.close().catch(() => undefined)
      })()
      return closing
    },
  }
}

/** Swallows a response we are about to retry (the 401 of a stale upstream token). */
function discard(): Writable {
  return new Writable({
    write(_chunk, _enc, cb) {
      cb()
    },
  })
}
