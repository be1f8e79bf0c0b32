import type {UpstreamDispatcher} from './forward.ts'
import type {IncomingMessage, Server, ServerOptions, ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'
import type {BearerAuthenticator} from '../auth/types.ts'
import {isToolgateError} from '../errors.ts'
import {isLoopbackHost} from '../http/loopback.ts'
import {closeGracefully, listen, urlOf} from '../http/listen.ts'
import {createServer} from '../http/node-http.ts'
import {listenOnSocket} from '../http/private-socket.ts'
import type {Logger} from '../log/logger.ts'
import type {TokenExchanger} from '../token-exchange/exchanger.ts'
import {createAdmission} from './admission.ts'
import {CREDENTIALS_UNAVAILABLE, RETRY_LATER, TOKEN_EXCHANGE_FAILED, answer} from './answer.ts'
import {effectiveBodyLimit} from './body-limit.ts'
import {buildCredentials} from './credentials.ts'
import {createForwarder, trackClient} from './forward-retry.ts'
import type {InjectedHeader} from './forward-headers.ts'
import {requestHeadersForTarget} from './hop-by-hop.ts'
import {
  incomingAuthEnabled,
  oauthConfigFromOidc,
  type IncomingOidcOptions,
} from './incoming-auth.ts'
import {createInterceptStep} from './intercept.ts'
import {targetPaths} from './endpoint-target.ts'
import {logPath} from './log-path.ts'
import {createOriginPolicy, loopbackOrigins, type OriginPolicy} from './origin.ts'
import {REFUSED, takeRequestBody} from './request-body.ts'
import {refusedRequestTarget} from './request-target.ts'
import {
  DEFAULT_MAX_CONNECTIONS,
  SERVER_LIMITS,
  answerClientErrors,
  clientErrorChallenge,
  limitConnections,
} from './server-limits.ts'
import type {RequestInterceptor, ResponseRewriter, UpstreamTokenSource} from './types.ts'
import {DEFAULT_TIMEOUTS, createUpstream, type UpstreamTimeouts} from './upstream.ts'
import {serveWellKnown, wellKnownDocument} from './well-known.ts'
import {encodePrincipalField, PRINCIPAL_FIELD, principalKey} from '../sessions/principal-key.ts'
import {SessionGuard, type GuardTicket} from '../sessions/session-guard.ts'
import type {SessionLimits} from '../sessions/session-table.ts'
import {auditFacts, ms, type AuditFacts, type RequestObserver} from '../audit/request-facts.ts'
import type {Outcome} from '../audit/auditor.ts'
import type {Tracing} from '../telemetry/tracing.ts'

export interface ProxyConfig {
  name: string
  targetUri: URL
  /** Reach the target through this unix socket / named pipe (`run`'s private bridge endpoint). */
  targetSocketPath?: string
  /** Reach the target in this process (the gateway's bridge, in-process-dispatcher.ts). */
  targetDispatcher?: UpstreamDispatcher
  /**
   * Listen on this unix socket / named pipe instead of host:port (`proxy stdio`'s private hop:
   * the pipeline adds the user's credentials, so no other local user may reach it).
   */
  listenSocketPath?: string
  host: string
  /** 0 = a free port. */
  port: number
  /** The flag that set `port`, for errors (`--port`; `run` says `--proxy-port`). */
  portFlag?: string
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
  /** Concurrent client connections; past it new ones get 503 (default 512). */
  maxConnections?: number
  /**
   * Forward the client's own bearer token upstream when incoming OIDC is on and no outgoing
   * credential is configured. Off by default: the MCP authorization spec forbids token passthrough.
   */
  forwardIncomingToken?: boolean
  /** Overrides of the listening socket's limits (server-limits.ts); tests shorten them. */
  serverLimits?: Partial<ServerOptions>
  /** Idle time allowed between body chunks of a body read before forwarding (default 15 s). */
  bodyIdleMs?: number
  /** Grace period for in-flight requests on close. */
  drainMs?: number
  timeouts?: UpstreamTimeouts
  /** Sessions per principal and in total, and their expiry (sessions/session-table.ts). */
  sessionLimits?: Partial<SessionLimits>
  /** The audit trail and the metrics (issue 35): told of every request and every refusal. */
  observers?: RequestObserver[]
  /** OpenTelemetry tracing (issue 35), when an OTLP endpoint is configured. */
  tracing?: Tracing
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
  /** MCP sessions the proxy holds now; undefined when `run`'s bridge holds them instead. */
  sessions(): number | undefined
  close(): Promise<void>
}

/**
 * Starts `toolgate proxy`: the pipeline of contract §3, outermost first — body limit → Origin →
 * incoming auth → interceptor (authz) → token exchange / outgoing token → header injection →
 * streaming forward.
 */
export async function startProxy(config: ProxyConfig, deps: ProxyDeps): Promise<RunningProxy> {
  const log = deps.logger.child({proxy: config.name})
  const limit = effectiveBodyLimit(config.maxRequestBodySize)
  const upstream = await createUpstream(
    config.targetUri,
    config.timeouts ?? DEFAULT_TIMEOUTS,
    config.targetSocketPath,
    config.targetDispatcher,
  )
  const authOn = incomingAuthEnabled(config.oidc)
  // The token validator (jose) is loaded only when incoming authentication is on: a workload's
  // background process without it stays smaller (issue 11).
  const authenticator =
    deps.authenticator ??
    (authOn
      ? (await import('../auth/index.ts')).createAuthenticator(
          oauthConfigFromOidc(config.oidc!, config.resourceUrl),
          {logger: log, configPath: '--oidc-* flags'},
        )
      : undefined)
  const outgoingAuth = Boolean(config.upstreamToken || config.tokenExchange)
  // Fields the proxy replaces or owns toward the target. `expect`: the proxy answers
  // `100-continue` itself (node does, before the request handler runs); undici refuses to send it.
  const drop = new Set(['host', 'expect'])
  // The token the client presented was issued for this proxy, not for the target: forwarding it
  // would let the target replay it (MCP authorization: no token passthrough).
  if (outgoingAuth || (authOn && !config.forwardIncomingToken)) drop.add('authorization')
  for (const h of config.forwardHeaders) drop.add(h.name)
  // Only the front names the principal to `run`'s bridge; a client-sent copy never passes.
  drop.add(PRINCIPAL_FIELD)
  // Sessions an upstream creates are tied to the principal that created them (issue 30). The
  // stdio bridge behind a private socket keeps its own sessions and is told the principal.
  const bridged = config.targetSocketPath !== undefined || config.targetDispatcher !== undefined
  const guard = bridged ? undefined : new SessionGuard(log, config.sessionLimits)
  const exchangeHeader = config.tokenExchange?.config.headerName?.toLowerCase()
  if (exchangeHeader) drop.add(exchangeHeader)
  // A body is read whole when something must see it: the interceptor, or a refreshing token
  // source that may replay it after a 401.
  const observers = config.observers ?? []
  const mustSee = Boolean(
    config.interceptor || config.upstreamToken?.onUnauthorized || observers.length > 0,
  )
  // One observer in effect, whatever their number: a request is reported to each.
  const observe: RequestObserver | undefined =
    observers.length === 0
      ? undefined
      : {
          request: (f: AuditFacts, o: Outcome) => observers.forEach((x) => x.request(f, o)),
          refused: (f: AuditFacts, st: number, r: string, d: number) =>
            observers.forEach((x) => x.refused(f, st, r, d)),
        }

  const wellKnown = wellKnownDocument(
    config.resourceUrl,
    config.oidc?.issuer,
    config.oidc?.scopes,
    authOn,
  )
  let originPolicy: OriginPolicy = createOriginPolicy(config.allowedOrigins)
  const admit = createAdmission({
    limit,
    originPolicy: () => originPolicy,
    authenticator,
    oidc: config.oidc,
    resourceUrl: config.resourceUrl,
    log,
  })
  const intercept = config.interceptor
    ? createInterceptStep(config.interceptor, {
        upstream,
        credentials: config,
        outgoingAuth,
        principalField: bridged,
      })
    : undefined
  const forward = createForwarder({upstream, credentials: config, log})

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = logPath(req.url)
    const audit = observe ? auditFacts(req) : undefined
    const refused = (reason: string) =>
      audit && observe!.refused(audit, res.statusCode, reason, ms(audit))
    const badTarget = refusedRequestTarget(req.url)
    if (badTarget) {
      log.info('request refused', {reason: badTarget, path})
      answer(res, 400, JSON.stringify({error: badTarget}))
      refused(badTarget)
      return
    }
    if (wellKnown && serveWellKnown(wellKnown, path, req.method ?? 'GET', res)) return
    const span = config.tracing?.start(req.method ?? 'GET', path, req.headers, config.name)
    if (span) {
      // After its children (registered later, they end first on the same event).
      res.once('close', () => setImmediate(() => span.end(res.statusCode)))
      if (audit) audit.traceId = span.traceId
    }

    // 1.–3. Body limit (declared), Origin, incoming authentication.
    const authStep = span && authenticator ? span.step('incoming auth') : undefined
    let admission = admit(req, res, path)
    if (admission instanceof Promise) admission = await admission
    authStep?.end(admission.ok ? undefined : admission.reason)
    if (!admission.ok) return refused(admission.reason)
    if (audit) audit.principal = admission.principal

    // 3b. The session named must be the caller's own (issue 30).
    let ticket: GuardTicket | undefined
    if (guard) {
      const outcome = guard.check(req, principalKey(admission.principal))
      if (!outcome.ok) {
        const r = outcome.refusal
        answer(res, r.status, r.body, r.headers)
        return refused('session not found for this caller')
      }
      ticket = outcome.ticket
      res.once('close', ticket.done)
    }

    let body = takeRequestBody(req, res, limit, mustSee, config.bodyIdleMs)
    if (body instanceof Promise) body = await body
    if (body === REFUSED) return refused('request body refused')
    if (audit) audit.body = body as Buffer | undefined

    const headers = requestHeadersForTarget(req.headers, drop)
    if (bridged) headers[PRINCIPAL_FIELD] = encodePrincipalField(principalKey(admission.principal))
    // The interceptor's rewriters read the body as text: ask for it uncoded (RFC 9110 §12.5.3).
    if (intercept) headers['accept-encoding'] = 'identity'

    // 4. Interceptor (authorization), with the whole body.
    let rewrite: ResponseRewriter | undefined
    if (intercept) {
      const authzStep = span?.step('authorization')
      const decision = await intercept(
        req,
        admission.principal,
        body as Buffer | undefined,
        headers,
      ).finally(() => authzStep?.end())
      if (decision.action === 'answer') {
        answer(res, decision.answer.status, decision.answer.body, decision.answer.headers)
        if (audit && decision.answer.status === 403)
          observe!.request(audit, {
            outcome: 'denied',
            status: 403,
            durationMs: ms(audit),
            decision: decision.audit,
          })
        else refused(decision.audit?.reason ?? 'refused by authorization')
        return
      }
      rewrite = decision.rewriteResponse
      if (audit) audit.decision = decision.audit
    }
    // `on`, not `once`: 'close' comes once, and the wrapper `once` makes is per request.
    if (audit)
      res.on('close', () =>
        observe!.request(audit, {
          outcome: res.statusCode < 400 && res.writableFinished ? 'success' : 'failure',
          status: res.statusCode,
          durationMs: ms(audit),
          decision: audit.decision,
        }),
      )

    // 5./6. Outgoing credentials and injected headers.
    const state = trackClient(res, outgoingAuth)
    let outgoing: string | undefined
    if (outgoingAuth) {
      const credStep = span?.step('outgoing credentials')
      try {
        const creds = await buildCredentials(config, req.headers.authorization, {
          signal: state.controller!.signal,
        }).finally(() => credStep?.end())
        Object.assign(headers, creds.headers)
        outgoing = creds.outgoing
      } catch (err) {
        if (isToolgateError(err, 'ERR_TOKEN_EXCHANGE')) {
          answer(res, 401, TOKEN_EXCHANGE_FAILED)
        } else {
          log.warn('no upstream token', {reason: (err as Error).message})
          answer(res, 503, CREDENTIALS_UNAVAILABLE, RETRY_LATER)
        }
        return
      }
    } else {
      // No token to fetch: the injected headers alone, without an await on the hot path.
      for (const h of config.forwardHeaders) headers[h.name] = h.value
    }

    // The upstream call's span: the target sees our traceparent (continuing the client's trace).
    if (span) {
      const up = span.upstream()
      Object.assign(headers, up.headers)
      res.once('close', () => up.end(res.statusCode))
    }

    // 7. Forward, streaming.
    await forward(req, res, {headers, outgoing, body, state, rewrite, retry: true, ticket})
  }

  const server = createServer({...SERVER_LIMITS, ...config.serverLimits}, (req, res) => {
    if (overLimit(req.socket)) return
    handle(req, res).catch((err) => {
      log.error('request failed', {path: logPath(req.url), reason: (err as Error).message})
      answer(res, 500, '{"error":"internal server error"}')
    })
  })
  const overLimit = limitConnections(server, config.maxConnections ?? DEFAULT_MAX_CONNECTIONS, log)
  answerClientErrors(server, authOn ? clientErrorChallenge(config) : undefined)

  let info: AddressInfo
  try {
    info = config.listenSocketPath
      ? await listenOnSocket(server, config.listenSocketPath).then(
          () => ({address: '127.0.0.1', family: 'IPv4', port: 0}) as AddressInfo,
        )
      : await listen(server, {host: config.host, port: config.port}, config.portFlag ?? '--port')
  } catch (err) {
    await upstream.close()
    throw err
  }
  const {endpoint} = targetPaths(config.targetUri)
  if (endpoint && !bridged)
    log.info(
      `--target-uri names the MCP endpoint ${endpoint}: clients use ${urlOf(info)}${endpoint}, forwarded to ${config.targetUri.href}`,
    )
  if (!authOn && !isLoopbackHost(config.host)) {
    log.warn(
      "!!! listening on a non-loopback address WITHOUT incoming authentication: anyone who can reach this port can use the MCP server with the proxy's credentials. Add --oidc-issuer, bind 127.0.0.1, or pass --require-auth to make this an error !!!",
      {host: config.host},
    )
  }
  if (config.allowedOrigins === undefined) {
    if (isLoopbackHost(config.host)) {
      originPolicy = createOriginPolicy(loopbackOrigins(info.port))
    } else {
      log.warn(
        'listening on a non-loopback address without --allowed-origins: Origin is not checked',
        {host: config.host},
      )
    }
  }

  let closing: Promise<void> | undefined
  return {
    server,
    url: urlOf(info),
    port: info.port,
    sessions: () => guard?.table.size,
    close() {
      closing ??= (async () => {
        guard?.close()
        await closeGracefully(server, config.drainMs ?? 10_000)
        await upstream.close().catch(() => undefined)
        await authenticator?.close().catch(() => undefined)
        await config.upstreamToken?.close?.().catch(() => undefined)
        await config.tokenExchange?.close().catch(() => undefined)
        await Promise.all(observers.map((o) => Promise.resolve(o.close?.()).catch(() => undefined)))
        await config.tracing?.shutdown().catch(() => undefined)
      })()
      return closing
    },
  }
}
