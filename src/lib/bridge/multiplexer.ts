import type {Logger} from '../log/logger.ts'
import {isRecord, type JsonRpcId} from '../mcp/json-rpc.ts'
import {ANONYMOUS_KEY, principalLabel, type PrincipalKey} from '../sessions/principal-key.ts'
import {logLevelRank, moreVerbose, type LogLevel} from './log-levels.ts'
import {versionFor} from '../mcp/protocol-versions.ts'

/**
 * Shares one stdio MCP server between many HTTP client sessions (issue 11).
 *
 * A stdio server speaks to exactly one peer, so every client request gets a fresh numeric id (and
 * progress token) before it reaches the server, and the client's own id is restored on the way
 * back: two clients that both send id 1 never see each other's answers. The first `initialize`
 * reaches the server; later ones are answered with its cached result.
 *
 * Server→client requests (sampling, elicitation, roots/list) carry nothing that names the client
 * request that caused them, so they are routed only where that cannot be wrong across callers
 * (issue 30): to the newest in-flight request when every request in flight belongs to one
 * principal, else — nothing in flight — to the most recently active session when every session
 * belongs to one principal. When two principals could have caused it, the request is never
 * guessed: the server gets a JSON-RPC error and the log says why (`run --isolation principal`
 * gives each caller a server of its own). Only the session a request went to may answer it.
 * A server's `ping` is answered here.
 *
 * Log levels are per session: `logging/setLevel` sets the sender's level and asks the server for
 * the most verbose level any session wants; `notifications/message` reaches only the sessions
 * whose level it meets.
 */

export type Message = Record<string, unknown>

export interface ClientSink {
  /** Delivers a message; `related` is the client's own request id it belongs to (its stream). */
  deliver(message: Message, related: JsonRpcId | undefined): void
  /** The session ended on the bridge side (server exited, shutdown). */
  end(reason: string): void
}

export interface MultiplexerOptions {
  /** Writes one message to the server's stdin; false when it cannot take it (not reading, gone). */
  send: (message: Message) => boolean | void
  requestTimeoutMs: number
  logger: Logger
  /** Bound on requests in flight over all sessions (each holds a timer and a map entry). */
  maxPending?: number
}

interface Session {
  id: string
  owner: PrincipalKey
  sink: ClientSink
  /** Set by this session's `logging/setLevel`; unset means every message (the MCP default). */
  logLevel: LogLevel | undefined
  pending: Set<number>
  /** Server→client requests this session must answer (server ids, as the server sent them). */
  owes: Set<JsonRpcId>
  subscriptions: Set<string>
  lastActive: number
}

interface PendingRequest {
  session: Session
  clientId: JsonRpcId
  method: string
  startedAt: number
  timer: NodeJS.Timeout
  /** The client's progress token, restored on `notifications/progress`. */
  progressToken?: unknown
  /** For resources/(un)subscribe: the URI, recorded when the server accepts. */
  uri?: string
}

// JSON-RPC implementation-defined server errors (§5.1: -32000 to -32099).
export const REQUEST_TIMEOUT = -32001
export const SERVER_UNAVAILABLE = -32002
export const TOO_MANY_REQUESTS = -32003
/** JSON-RPC §5.1 internal error: the bridge could not deliver a server→client request. */
export const NOT_DELIVERED = -32603

export class Multiplexer {
  private readonly sessions = new Map<string, Session>()
  private readonly pending = new Map<number, PendingRequest>()
  /** Server→client requests in flight: server id → the session that must answer. */
  private readonly serverRequests = new Map<JsonRpcId, Session>()
  private nextId = 1
  private init: {
    result?: unknown
    inFlight?: number
    waiters: Array<[Session, JsonRpcId, Message]>
  } = {
    waiters: [],
  }
  private initializedSent = false
  private readonly maxPending: number

  private readonly options: MultiplexerOptions

  constructor(options: MultiplexerOptions) {
    this.options = options

    this.maxPending = options.maxPending ?? 10_000
  }

  get sessionCount(): number {
    return this.sessions.size
  }

  hasSession(id: string): boolean {
    return this.sessions.has(id)
  }

  open(id: string, sink: ClientSink, owner: PrincipalKey = ANONYMOUS_KEY): void {
    this.sessions.set(id, {
      id,
      owner,
      sink,
      logLevel: undefined,
      pending: new Set(),
      owes: new Set(),
      subscriptions: new Set(),
      lastActive: Date.now(),
    })
  }

  /** A client went away: its requests are cancelled on the server, its debts answered. */
  close(id: string, reason = 'client disconnected'): void {
    const session = this.sessions.get(id)
    if (!session) return
    this.sessions.delete(id)
    for (const globalId of session.pending) this.cancelOnServer(globalId, reason)
    for (const serverId of session.owes) {
      this.serverRequests.delete(serverId)
      this.options.send(errorMessage(serverId, SERVER_UNAVAILABLE, reason))
    }
  }

  /** The client stopped waiting for one of its requests (its answer stream closed). */
  abandon(id: string, clientId: JsonRpcId, reason = 'client disconnected'): void {
    const session = this.sessions.get(id)
    if (!session) return
    for (const globalId of session.pending) {
      if (this.pending.get(globalId)?.clientId === clientId) this.cancelOnServer(globalId, reason)
    }
  }

  /** One JSON-RPC message from a client session (already checked to be a JSON-RPC object). */
  fromClient(sessionId: string, message: Message): void {
    const session = this.sessions.get(sessionId)
    if (!session) return
    session.lastActive = Date.now()
    const method = message.method
    if (typeof method !== 'string') return this.answerFromClient(session, message)
    if (!('id' in message)) return this.notificationFromClient(session, message)
    const clientId = message.id as JsonRpcId
    if (method === 'initialize') return this.initialize(session, message, clientId)
    this.forwardRequest(session, message, clientId, method)
  }

  /** One message from the server's stdout. */
  fromServer(message: Message): void {
    const method = message.method
    if (typeof method !== 'string') return this.responseFromServer(message)
    if ('id' in message) return this.requestFromServer(message)
    this.notificationFromServer(method, message)
  }

  /**
   * The server process is gone (exit, restart): every waiting request gets an error, every session
   * ends (clients re-initialize against the next process), the initialize cache is cleared.
   */
  serverGone(reason: string): void {
    for (const [globalId, req] of this.pending) {
      clearTimeout(req.timer)
      req.session.sink.deliver(errorMessage(req.clientId, SERVER_UNAVAILABLE, reason), req.clientId)
      this.pending.delete(globalId)
    }
    for (const session of this.sessions.values()) session.sink.end(reason)
    this.sessions.clear()
    this.serverRequests.clear()
    this.init = {waiters: []}
    this.initializedSent = false
  }

  /**
   * The bridge's own `initialize` (issue 31): `run` checks that the server answers before it
   * reports the workload running, and every client is then answered from this result (with its
   * own protocol version where it may have it, issue 33). The server sees these capabilities, the
   * ones the bridge can route to clients. Resolves with the server's answer (or an error message).
   */
  initializeServer(params: Record<string, unknown>): Promise<Message> {
    return new Promise((resolve) => {
      const sink: ClientSink = {
        deliver: (m) => {
          if ('result' in m && !this.initializedSent) {
            this.initializedSent = true
            this.options.send({jsonrpc: '2.0', method: 'notifications/initialized'})
          }
          resolve(m)
        },
        end: (reason) => resolve(errorMessage(null, SERVER_UNAVAILABLE, reason)),
      }
      const bridge: Session = {
        id: '',
        owner: BRIDGE_OWNER,
        sink,
        logLevel: undefined,
        pending: new Set(),
        owes: new Set(),
        subscriptions: new Set(),
        lastActive: Date.now(),
      }
      this.initialize(bridge, {jsonrpc: '2.0', id: 0, method: 'initialize', params}, 0)
    })
  }

  private initialize(session: Session, message: Message, clientId: JsonRpcId): void {
    if (this.init.result !== undefined) {
      session.sink.deliver(
        {jsonrpc: '2.0', id: clientId, result: this.answerFor(message, this.init.result)},
        clientId,
      )
      return
    }
    if (this.init.inFlight !== undefined) {
      this.init.waiters.push([session, clientId, message])
      return
    }
    const globalId = this.forwardRequest(session, message, clientId, 'initialize')
    if (globalId !== undefined) this.init.inFlight = globalId
  }

  private forwardRequest(
    session: Session,
    message: Message,
    clientId: JsonRpcId,
    method: string,
  ): number | undefined {
    if (this.pending.size >= this.maxPending) {
      session.sink.deliver(
        errorMessage(clientId, TOO_MANY_REQUESTS, 'too many requests in flight; retry later'),
        clientId,
      )
      return undefined
    }
    const globalId = this.nextId++
    const req: PendingRequest = {
      session,
      clientId,
      method,
      startedAt: Date.now(),
      timer: setTimeout(() => this.timeOut(globalId), this.options.requestTimeoutMs),
    }
    req.timer.unref()
    const params = message.params
    if (isRecord(params)) {
      const meta = params._meta
      if (isRecord(meta) && meta.progressToken !== undefined) {
        req.progressToken = meta.progressToken
        message = {...message, params: {...params, _meta: {...meta, progressToken: globalId}}}
      }
      if (
        (method === 'resources/subscribe' || method === 'resources/unsubscribe') &&
        typeof params.uri === 'string'
      )
        req.uri = params.uri
      if (method === 'logging/setLevel' && logLevelRank(params.level) !== undefined) {
        // The sender's level is its own; the server is asked for the most verbose one any
        // session wants, and notifications/message is filtered per session on the way out.
        session.logLevel = params.level as LogLevel
        message = {...message, params: {...params, level: this.serverLogLevel()}}
      }
    }
    this.pending.set(globalId, req)
    session.pending.add(globalId)
    if (this.options.send({...message, id: globalId}) === false) {
      this.settle(globalId, req)
      session.sink.deliver(
        errorMessage(clientId, SERVER_UNAVAILABLE, 'the MCP server is not reading its input'),
        clientId,
      )
      return undefined
    }
    return globalId
  }

  private timeOut(globalId: number): void {
    const req = this.pending.get(globalId)
    if (!req) return
    const seconds = this.options.requestTimeoutMs / 1000
    this.options.logger.warn('request timed out', {method: req.method, seconds})
    this.cancelOnServer(globalId, 'request timed out')
    req.session.sink.deliver(
      errorMessage(req.clientId, REQUEST_TIMEOUT, `Request timed out after ${seconds} s`),
      req.clientId,
    )
  }

  /** Forgets a client request and tells the server to stop working on it. */
  private cancelOnServer(globalId: number, reason: string): void {
    const req = this.pending.get(globalId)
    if (!req) return
    this.settle(globalId, req)
    this.options.send({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: {requestId: globalId, reason},
    })
  }

  private settle(globalId: number, req: PendingRequest): void {
    clearTimeout(req.timer)
    this.pending.delete(globalId)
    req.session.pending.delete(globalId)
    if (this.init.inFlight === globalId) this.init.inFlight = undefined
  }

  private notificationFromClient(session: Session, message: Message): void {
    const method = message.method
    if (method === 'notifications/initialized') {
      // The server was initialized once; it must see this notification once.
      if (this.initializedSent) return
      this.initializedSent = true
    } else if (method === 'notifications/cancelled') {
      return this.cancelFromClient(session, message)
    }
    this.options.send(message)
  }

  /** A client cancels one of its own requests (never another session's: ids are per session). */
  private cancelFromClient(session: Session, message: Message): void {
    const params = isRecord(message.params) ? message.params : {}
    for (const globalId of session.pending) {
      if (this.pending.get(globalId)?.clientId === params.requestId) {
        const reason = typeof params.reason === 'string' ? params.reason : 'cancelled by client'
        this.cancelOnServer(globalId, reason)
        return
      }
    }
  }

  private answerFromClient(session: Session, message: Message): void {
    const serverId = message.id as JsonRpcId
    // Only the session the request went to may answer it: another client cannot slip a sampling
    // result into someone else's conversation.
    if (this.serverRequests.get(serverId) !== session) {
      this.options.logger.warn('dropped an answer to a request this session was not asked', {
        session: session.id,
      })
      return
    }
    this.serverRequests.delete(serverId)
    session.owes.delete(serverId)
    this.options.send(message)
  }

  private responseFromServer(message: Message): void {
    const globalId = message.id
    const req = typeof globalId === 'number' ? this.pending.get(globalId) : undefined
    if (!req) return // answered after a timeout or a cancellation: nobody waits for it any more
    this.settle(globalId as number, req)
    if (req.method === 'initialize') return this.initialized(req, message)
    if (req.uri !== undefined && 'result' in message) {
      if (req.method === 'resources/subscribe') req.session.subscriptions.add(req.uri)
      else req.session.subscriptions.delete(req.uri)
    }
    req.session.sink.deliver({...message, id: req.clientId}, req.clientId)
  }

  private initialized(req: PendingRequest, message: Message): void {
    req.session.sink.deliver({...message, id: req.clientId}, req.clientId)
    const waiters = this.init.waiters
    this.init.waiters = []
    if ('result' in message) {
      this.init.result = message.result
      for (const [session, clientId, request] of waiters) {
        session.sink.deliver(
          {jsonrpc: '2.0', id: clientId, result: this.answerFor(request, message.result)},
          clientId,
        )
      }
      return
    }
    // The server refused: the next waiter tries for itself.
    const [next, ...rest] = waiters
    this.init.waiters = rest
    if (next && this.sessions.has(next[0].id)) this.initialize(next[0], next[2], next[1])
  }

  /** The cached initialize result for one client: its own protocol version where it may have it. */
  private answerFor(request: Message, result: unknown): unknown {
    if (!isRecord(result) || typeof result.protocolVersion !== 'string') return result
    const asked = isRecord(request.params) ? request.params.protocolVersion : undefined
    const version = versionFor(asked, result.protocolVersion)
    const info = isRecord(request.params) ? request.params.clientInfo : undefined
    // Which client got which protocol version: what to look at when a client shows Disconnected.
    this.options.logger.info('client initialized', {
      client: isRecord(info) ? String(info.name).slice(0, 80) : 'unknown',
      asked: typeof asked === 'string' ? asked.slice(0, 20) : 'none',
      protocolVersion: version,
    })
    return version === result.protocolVersion ? result : {...result, protocolVersion: version}
  }

  private requestFromServer(message: Message): void {
    const serverId = message.id as JsonRpcId
    if (message.method === 'ping') {
      this.options.send({jsonrpc: '2.0', id: serverId, result: {}})
      return
    }
    const target = this.addressee()
    if (!target.ok) {
      this.options.logger.warn('server request not delivered', {
        method: message.method,
        reason: target.reason,
      })
      this.options.send(errorMessage(serverId, target.code, target.reason))
      return
    }
    const {session, clientId} = target
    this.serverRequests.set(serverId, session)
    session.owes.add(serverId)
    session.sink.deliver(message, clientId)
  }

  /**
   * Where a server→client request goes: the newest request in flight (the likeliest cause) when
   * every request in flight is one principal's; with nothing in flight, the most recently active
   * session when every session is one principal's. Never a guess across principals.
   */
  private addressee():
    | {ok: true; session: Session; clientId: JsonRpcId | undefined}
    | {ok: false; code: number; reason: string} {
    let newest: PendingRequest | undefined
    const owners = new Set<PrincipalKey>()
    for (const req of this.pending.values()) {
      if (req.method === 'initialize') continue
      owners.add(req.session.owner)
      if (!newest || req.startedAt >= newest.startedAt) newest = req
    }
    if (newest) {
      if (owners.size === 1) return {ok: true, session: newest.session, clientId: newest.clientId}
    } else {
      let best: Session | undefined
      for (const s of this.sessions.values()) {
        owners.add(s.owner)
        if (!best || s.lastActive >= best.lastActive) best = s
      }
      if (!best) return {ok: false, code: SERVER_UNAVAILABLE, reason: 'no client is connected'}
      if (owners.size === 1) return {ok: true, session: best, clientId: undefined}
    }
    return {
      ok: false,
      code: NOT_DELIVERED,
      reason: `cannot tell which of ${owners.size} callers this request is for (${[...owners].map(principalLabel).join(', ')}); it was not delivered. Run the workload with --isolation principal to give each caller its own server`,
    }
  }

  /** The level the server is asked for: the most verbose any session wants (unset: debug). */
  private serverLogLevel(): LogLevel {
    let level: LogLevel = 'emergency'
    for (const s of this.sessions.values()) level = moreVerbose(level, s.logLevel ?? 'debug')
    return level
  }

  private notificationFromServer(method: string, message: Message): void {
    const params = isRecord(message.params) ? message.params : {}
    if (method === 'notifications/progress') {
      const req =
        typeof params.progressToken === 'number'
          ? this.pending.get(params.progressToken)
          : undefined
      if (!req || req.progressToken === undefined) return
      const restored = {...message, params: {...params, progressToken: req.progressToken}}
      return req.session.sink.deliver(restored, req.clientId)
    }
    if (method === 'notifications/cancelled') {
      // The server gave up on one of its own requests: only its addressee hears of it.
      const session = this.serverRequests.get(params.requestId as JsonRpcId)
      if (!session) return
      this.serverRequests.delete(params.requestId as JsonRpcId)
      session.owes.delete(params.requestId as JsonRpcId)
      return session.sink.deliver(message, undefined)
    }
    if (method === 'notifications/resources/updated') {
      // Only sessions that subscribed (and were allowed to, when a policy applies) hear of a URI.
      for (const s of this.sessions.values()) {
        if (typeof params.uri === 'string' && s.subscriptions.has(params.uri))
          s.sink.deliver(message, undefined)
      }
      return
    }
    if (method === 'notifications/message') {
      // Each session hears the levels it asked for (all of them until it sets one).
      const rank = logLevelRank(params.level)
      for (const s of this.sessions.values()) {
        const wanted = s.logLevel === undefined ? undefined : logLevelRank(s.logLevel)
        if (wanted === undefined || rank === undefined || rank >= wanted)
          s.sink.deliver(message, undefined)
      }
      return
    }
    // list_changed and the like concern every client.
    for (const s of this.sessions.values()) s.sink.deliver(message, undefined)
  }
}

/** The owner of the bridge's own requests (never a caller's key: callers' keys are JSON text). */
const BRIDGE_OWNER = '\0bridge'

export function errorMessage(id: JsonRpcId | null, code: number, message: string): Message {
  return {jsonrpc: '2.0', id, error: {code, message}}
}
