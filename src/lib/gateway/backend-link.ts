import {SSEClientTransport} from '@modelcontextprotocol/sdk/client/sse.js'
import type {Transport} from '@modelcontextprotocol/sdk/shared/transport.js'
import type {JSONRPCMessage} from '@modelcontextprotocol/sdk/types.js'
import {isRecord, type JsonRpcId} from '../mcp/json-rpc.ts'
import type {Logger} from '../log/logger.ts'
import type {BackendConfig} from './config.ts'
import type {BackendTarget} from './backend-target.ts'
import {LinkHttpError, StreamableLinkTransport} from './link-transport.ts'

/**
 * One MCP session with one backend, on behalf of one gateway client session (issue 37). It numbers
 * its own requests, so a client's ids never reach a backend and two sessions never share one; what
 * the backend asks (sampling, elicitation, roots) and says (notifications) goes to the one session
 * that owns this link. Every request has its own abort: an answer, a timeout or a cancellation ends
 * its HTTP exchange, so nothing a backend holds open outlives the request it belongs to.
 */

export type Message = Record<string, unknown>

export interface LinkEvents {
  /** A request from the backend (ping is answered here). */
  onRequest(link: BackendLink, message: Message): void
  onNotification(link: BackendLink, message: Message): void
  /** The connection failed (network error, the backend forgot the session). */
  onLost(link: BackendLink, reason: string): void
}

export interface LinkOptions {
  logger: Logger
  requestTimeoutMs: number
  connectTimeoutMs: number
}

/** What the backend said about itself in `initialize`. */
export interface BackendInfo {
  protocolVersion: string
  capabilities: Record<string, unknown>
  serverInfo?: unknown
  instructions?: string
}

export interface ClientHello {
  protocolVersion: string
  capabilities: Record<string, unknown>
  clientInfo: unknown
}

// JSON-RPC implementation-defined server errors (§5.1), as the stdio bridge uses them.
export const REQUEST_TIMEOUT = -32001
export const BACKEND_UNAVAILABLE = -32002
/** The answer a cancelled request resolves with (never delivered: the client cancelled it). */
export const REQUEST_CANCELLED = -32800
const BACKEND_HTTP_ERROR = -32603
/** Notifications and answers to the backend: sent within this, or dropped. */
const NOTIFY_TIMEOUT_MS = 10_000

/** Why a request's exchange is ended once it is settled (answered, timed out, cancelled). */
const SETTLED = Object.freeze(new Error('the request is settled'))

/** Answers the link made itself (unreachable, timed out): a backend cannot forge one. */
const LINK_MADE = new WeakSet<Message>()

function linkAnswer(id: JsonRpcId | null, code: number, message: string): Message {
  const answer = {jsonrpc: '2.0', id, error: {code, message}}
  LINK_MADE.add(answer)
  return answer
}

/** Whether an answer is the link's own failure (unreachable, timed out), not the backend's. */
export function isLinkFailure(answer: Message): boolean {
  const e = answer.error
  return (
    LINK_MADE.has(answer) &&
    isRecord(e) &&
    (e.code === BACKEND_UNAVAILABLE || e.code === REQUEST_TIMEOUT)
  )
}

interface Pending {
  resolve: (answer: Message) => void
  timer: NodeJS.Timeout
  abort: AbortController
}

export class BackendLink {
  readonly backend: BackendConfig
  state: 'idle' | 'connecting' | 'up' | 'down' | 'closed' = 'idle'
  info: BackendInfo | undefined
  /** When the link last came up (a link lost soon after is flapping: it waits for the probe). */
  upSince = 0
  readonly #target: BackendTarget
  readonly #events: LinkEvents
  readonly #options: LinkOptions
  readonly #pending = new Map<number, Pending>()
  #transport: Transport | undefined
  #nextId = 1
  /** Bumped on every (re)connect, loss and close: work of an older connection is dropped. */
  #generation = 0
  #suspecting = false

  constructor(
    backend: BackendConfig,
    target: BackendTarget,
    events: LinkEvents,
    options: LinkOptions,
  ) {
    this.backend = backend
    this.#target = target
    this.#events = events
    this.#options = options
  }

  get up(): boolean {
    return this.state === 'up'
  }

  /** Whether the backend can tell us, now, that its lists changed (its standalone stream is open). */
  get hearsChanges(): boolean {
    const t = this.#transport
    return this.up && (!(t instanceof StreamableLinkTransport) || t.streamOpen)
  }

  /**
   * Opens a session: initialize, then notifications/initialized, all within the connect timeout.
   * Rejects with why not; a close or another connect meanwhile supersedes it.
   */
  async connect(hello: ClientHello): Promise<void> {
    if (this.state === 'closed') throw new Error('the session ended')
    await this.#retire()
    const generation = ++this.#generation
    this.state = 'connecting'
    const stale = () => generation !== this.#generation || this.state === 'closed'
    const deadline = AbortSignal.timeout(this.#options.connectTimeoutMs)
    let transport: Transport | undefined
    try {
      const where = await beforeDeadline(this.#target.resolve(), deadline)
      if (stale()) throw new Error('superseded')
      const fetch = this.#target.fetch
      transport =
        where.kind === 'sse'
          ? new SSEClientTransport(where.url, {fetch, eventSourceInit: {fetch}})
          : new StreamableLinkTransport(where.url, this.#target.dispatcher)
      transport.onmessage = (m) => generation === this.#generation && this.#received(m as Message)
      transport.onerror = (err) => generation === this.#generation && this.#suspect(err.message)
      transport.onclose = () =>
        generation === this.#generation && this.#suspect('connection closed')
      this.#transport = transport
      // The legacy SSE transport starts by waiting for the server's endpoint event.
      await beforeDeadline(transport.start(), deadline)
      if (stale()) throw new Error('superseded')
      const answer = await this.#call('initialize', hello, this.#options.connectTimeoutMs)
      if (stale()) throw new Error('superseded')
      const result = answer.result
      if (!isRecord(result) || typeof result.protocolVersion !== 'string')
        throw new Error(`initialize failed: ${describeError(answer)}`)
      this.info = {
        protocolVersion: result.protocolVersion,
        capabilities: isRecord(result.capabilities) ? result.capabilities : {},
        ...(result.serverInfo !== undefined ? {serverInfo: result.serverInfo} : {}),
        ...(typeof result.instructions === 'string' ? {instructions: result.instructions} : {}),
      }
      transport.setProtocolVersion?.(result.protocolVersion)
      this.state = 'up'
      this.upSince = Date.now()
      await this.notify('notifications/initialized')
      if (stale()) throw new Error('superseded')
    } catch (err) {
      if (!stale()) {
        this.state = 'down'
        this.#generation++
        await this.#drop()
      } else if (transport && transport !== this.#transport) {
        await transport.close().catch(() => undefined)
      }
      throw err
    }
  }

  /** Sends a request; resolves with the backend's answer (or an error answer naming the backend). */
  request(method: string, params: unknown, onSent?: (id: number) => void): Promise<Message> {
    if (!this.up) return Promise.resolve(this.unavailable(0))
    return this.#call(method, params, this.#options.requestTimeoutMs, onSent)
  }

  /** Cancels one of this link's requests on the backend; its answer, if any, is dropped. */
  cancel(id: number, reason: string): void {
    const p = this.#settle(id)
    if (!p) return
    p.resolve(linkAnswer(id, REQUEST_CANCELLED, reason))
    void this.notify('notifications/cancelled', {requestId: id, reason})
  }

  async notify(method: string, params?: unknown): Promise<void> {
    const message = {jsonrpc: '2.0', method, ...(params !== undefined ? {params} : {})}
    await this.#sendBounded(message).catch(() => undefined)
  }

  /** Answers a request the backend sent (its own id). */
  async answer(id: JsonRpcId, body: {result?: unknown; error?: unknown}): Promise<void> {
    await this.#sendBounded({jsonrpc: '2.0', id, ...body}).catch(() => undefined)
  }

  /** The answer a request gets when this backend cannot take it. */
  unavailable(id: JsonRpcId | null, why?: string): Message {
    const reason = why ?? 'it is not connected'
    return linkAnswer(
      id,
      BACKEND_UNAVAILABLE,
      `backend "${this.backend.name}" is unavailable: ${reason}`,
    )
  }

  /** Ends the session (DELETE for streamable HTTP) and fails what is in flight. */
  async close(): Promise<void> {
    this.state = 'closed'
    this.#generation++
    this.#failPending('the session ended')
    await this.#retire()
  }

  /** Marks the link down and fails what is in flight (the owner decides about reconnecting). */
  down(reason: string): void {
    if (this.state === 'closed') return
    this.state = 'down'
    this.#generation++
    this.#failPending(reason)
    void this.#drop()
  }

  #call(
    method: string,
    params: unknown,
    timeoutMs: number,
    onSent?: (id: number) => void,
  ): Promise<Message> {
    const id = this.#nextId++
    const abort = new AbortController()
    return new Promise<Message>((resolve) => {
      const timer = setTimeout(() => {
        if (!this.#settle(id)) return
        void this.notify('notifications/cancelled', {requestId: id, reason: 'timed out'})
        resolve(
          linkAnswer(
            id,
            REQUEST_TIMEOUT,
            `backend "${this.backend.name}" did not answer within ${Math.round(timeoutMs / 1000)} s`,
          ),
        )
      }, timeoutMs)
      this.#pending.set(id, {resolve, timer, abort})
      onSent?.(id)
      const message = {jsonrpc: '2.0', id, method, ...(params !== undefined ? {params} : {})}
      this.#send(message, abort.signal).catch((err: Error) => {
        if (!this.#settle(id)) return
        if (err instanceof LinkHttpError && err.status !== 404) {
          // The backend refused this one request (its body, its size): the link is fine. Its
          // error text stays in our log, not in the client's answer.
          this.#options.logger.info('backend refused a request', {
            backend: this.backend.name,
            method,
            status: err.status,
          })
          resolve({
            jsonrpc: '2.0',
            id,
            error: {
              code: BACKEND_HTTP_ERROR,
              message: `backend "${this.backend.name}" answered HTTP ${err.status}`,
            },
          })
          return
        }
        resolve(this.unavailable(id, err.message))
        // The request never arrived: the connection is gone, or the backend forgot the session.
        this.#lost(err.message)
      })
    })
  }

  /** A notification or an answer: within NOTIFY_TIMEOUT_MS, and never past this connection. */
  async #sendBounded(message: Message): Promise<void> {
    const t = this.#transport
    if (!t) throw new Error('not connected')
    if (t instanceof StreamableLinkTransport)
      await t.postBounded(message as JSONRPCMessage, NOTIFY_TIMEOUT_MS)
    else await t.send(message as JSONRPCMessage)
  }

  async #send(message: Message, signal: AbortSignal): Promise<void> {
    const t = this.#transport
    if (!t) throw new Error('not connected')
    if (t instanceof StreamableLinkTransport) await t.post(message as JSONRPCMessage, signal)
    else await t.send(message as JSONRPCMessage)
  }

  #received(message: Message): void {
    const method = message.method
    if (typeof method === 'string') {
      if (!('id' in message)) return this.#events.onNotification(this, message)
      if (method === 'ping') return void this.answer(message.id as JsonRpcId, {result: {}})
      return this.#events.onRequest(this, message)
    }
    const id = message.id
    if (typeof id !== 'number') return
    this.#settle(id)?.resolve(message)
  }

  /**
   * The transport reported trouble (its standalone stream ended, a reconnect failed). That alone
   * does not mean the session is gone — a server may end an idle stream — so the backend is
   * pinged: only when the ping cannot get through is the link lost.
   */
  #suspect(reason: string): void {
    if (this.state !== 'up' || this.#suspecting) return
    this.#suspecting = true
    void this.#call('ping', undefined, Math.min(this.#options.requestTimeoutMs, 5_000)).then(
      (answer) => {
        this.#suspecting = false
        if (isLinkFailure(answer)) this.#lost(reason)
      },
    )
  }

  #lost(reason: string): void {
    if (this.state !== 'up') return
    this.state = 'down'
    this.#options.logger.info('backend connection lost', {backend: this.backend.name, reason})
    this.#events.onLost(this, reason)
  }

  /** Forgets a request: its timer, and its HTTP exchange (a stream the backend holds open). */
  #settle(id: number): Pending | undefined {
    const p = this.#pending.get(id)
    if (!p) return undefined
    clearTimeout(p.timer)
    this.#pending.delete(id)
    // One shared reason: abort() would otherwise build an AbortError (with its stack) per request.
    p.abort.abort(SETTLED)
    return p
  }

  #failPending(reason: string): void {
    for (const id of [...this.#pending.keys()])
      this.#settle(id)?.resolve(this.unavailable(id, reason))
  }

  /** Ends the backend session we had (DELETE, bounded), then the transport. */
  async #retire(): Promise<void> {
    const t = this.#transport
    if (t instanceof StreamableLinkTransport) await t.terminateSession()
    await this.#drop()
  }

  async #drop(): Promise<void> {
    const t = this.#transport
    this.#transport = undefined
    if (!t) return
    t.onclose = undefined
    t.onerror = undefined
    t.onmessage = undefined
    await t.close().catch(() => undefined)
  }
}

/** `promise`, or a rejection once `signal` fires (a connect step that never ends). */
function beforeDeadline<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const fail = () => reject(new Error('no answer within the connect timeout'))
    if (signal.aborted) return fail()
    signal.addEventListener('abort', fail, {once: true})
    promise.then(
      (v) => {
        signal.removeEventListener('abort', fail)
        resolve(v)
      },
      (err: unknown) => {
        signal.removeEventListener('abort', fail)
        reject(err as Error)
      },
    )
  })
}

export function describeError(answer: Message): string {
  const e = answer.error
  if (isRecord(e) && typeof e.message === 'string') return e.message.slice(0, 200)
  return 'no result'
}
