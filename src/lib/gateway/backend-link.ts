import {SSEClientTransport} from '@modelcontextprotocol/sdk/client/sse.js'
import type {Transport} from '@modelcontextprotocol/sdk/shared/transport.js'
import type {JSONRPCMessage} from '@modelcontextprotocol/sdk/types.js'
import {isRecord, type JsonRpcId} from '../mcp/json-rpc.ts'
import type {Logger} from '../log/logger.ts'
import type {BackendConfig} from './config.ts'
import type {BackendTarget} from './backend-target.ts'
import {StreamableLinkTransport} from './link-transport.ts'

/**
 * One MCP session with one backend, on behalf of one gateway client session (issue 37): the MCP
 * SDK's client transports used as raw message pipes. It numbers its own requests, so a client's
 * ids never reach a backend and two sessions never share one; what the backend asks (sampling,
 * elicitation, roots) and says (notifications) goes to the one session that owns this link.
 */

export type Message = Record<string, unknown>

export interface LinkEvents {
  /** A request from the backend (ping is answered here). */
  onRequest(link: BackendLink, message: Message): void
  onNotification(link: BackendLink, message: Message): void
  /** The connection failed (stream lost, network error, session forgotten). */
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

interface Pending {
  resolve: (answer: Message) => void
  timer: NodeJS.Timeout
}

export class BackendLink {
  readonly backend: BackendConfig
  state: 'idle' | 'connecting' | 'up' | 'down' | 'closed' = 'idle'
  info: BackendInfo | undefined
  readonly #target: BackendTarget
  readonly #events: LinkEvents
  readonly #options: LinkOptions
  readonly #pending = new Map<number, Pending>()
  #transport: Transport | undefined
  #nextId = 1
  /** Bumped on every (re)connect: events of an older transport are ignored. */
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

  /** Opens a session: initialize, then notifications/initialized. Rejects with why not. */
  async connect(hello: ClientHello): Promise<void> {
    await this.#drop()
    if (this.state === 'closed') throw new Error('closed')
    this.state = 'connecting'
    const generation = ++this.#generation
    const where = await this.#target.resolve()
    const fetch = this.#target.fetch
    const transport: Transport =
      where.kind === 'sse'
        ? new SSEClientTransport(where.url, {fetch, eventSourceInit: {fetch}})
        : new StreamableLinkTransport(where.url, this.#target.dispatcher)
    transport.onmessage = (m) => generation === this.#generation && this.#received(m as Message)
    transport.onerror = (err) => generation === this.#generation && this.#suspect(err.message)
    transport.onclose = () => generation === this.#generation && this.#suspect('connection closed')
    this.#transport = transport
    await transport.start()
    const answer = await this.#call('initialize', hello, this.#options.connectTimeoutMs)
    if (generation !== this.#generation) throw new Error('superseded')
    const result = answer.result
    if (!isRecord(result) || typeof result.protocolVersion !== 'string') {
      await this.#drop()
      this.state = 'down'
      throw new Error(`initialize failed: ${describeError(answer)}`)
    }
    this.info = {
      protocolVersion: result.protocolVersion,
      capabilities: isRecord(result.capabilities) ? result.capabilities : {},
      ...(result.serverInfo !== undefined ? {serverInfo: result.serverInfo} : {}),
      ...(typeof result.instructions === 'string' ? {instructions: result.instructions} : {}),
    }
    transport.setProtocolVersion?.(result.protocolVersion)
    this.state = 'up'
    await this.notify('notifications/initialized')
  }

  /** Sends a request; resolves with the backend's answer (or an error answer naming the backend). */
  request(method: string, params: unknown, onSent?: (id: number) => void): Promise<Message> {
    if (!this.up) return Promise.resolve(this.unavailable(0))
    return this.#call(method, params, this.#options.requestTimeoutMs, onSent)
  }

  /** Cancels one of this link's requests on the backend; its answer, if any, is dropped. */
  cancel(id: number, reason: string): void {
    const p = this.#pending.get(id)
    if (!p) return
    this.#settle(id)
    p.resolve({jsonrpc: '2.0', id, error: {code: REQUEST_CANCELLED, message: reason}})
    void this.notify('notifications/cancelled', {requestId: id, reason})
  }

  async notify(method: string, params?: unknown): Promise<void> {
    const message = {jsonrpc: '2.0', method, ...(params !== undefined ? {params} : {})}
    await this.#send(message).catch(() => undefined)
  }

  /** Answers a request the backend sent (its own id). */
  async answer(id: JsonRpcId, body: {result?: unknown; error?: unknown}): Promise<void> {
    await this.#send({jsonrpc: '2.0', id, ...body}).catch(() => undefined)
  }

  /** The answer a request gets when this backend cannot take it. */
  unavailable(id: JsonRpcId | null, why?: string): Message {
    const reason = why ?? 'it is not connected'
    return {
      jsonrpc: '2.0',
      id,
      error: {
        code: BACKEND_UNAVAILABLE,
        message: `backend "${this.backend.name}" is unavailable: ${reason}`,
      },
    }
  }

  /** Ends the session (DELETE for streamable HTTP) and fails what is in flight. */
  async close(): Promise<void> {
    this.state = 'closed'
    this.#failPending('the session ended')
    const t = this.#transport
    if (t instanceof StreamableLinkTransport) await t.terminateSession()
    await this.#drop()
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
    return new Promise<Message>((resolve) => {
      const timer = setTimeout(() => {
        this.#settle(id)
        void this.notify('notifications/cancelled', {requestId: id, reason: 'timed out'})
        resolve({
          jsonrpc: '2.0',
          id,
          error: {
            code: REQUEST_TIMEOUT,
            message: `backend "${this.backend.name}" did not answer within ${Math.round(timeoutMs / 1000)} s`,
          },
        })
      }, timeoutMs)
      this.#pending.set(id, {resolve, timer})
      onSent?.(id)
      const message = {jsonrpc: '2.0', id, method, ...(params !== undefined ? {params} : {})}
      this.#send(message).catch((err: Error) => {
        const p = this.#pending.get(id)
        if (!p) return
        this.#settle(id)
        p.resolve(this.unavailable(id, err.message))
        // The request never arrived: the connection (or the backend's session) is gone.
        this.#lost(err.message)
      })
    })
  }

  async #send(message: Message): Promise<void> {
    const t = this.#transport
    if (!t) throw new Error('not connected')
    await t.send(message as JSONRPCMessage)
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
    const p = this.#pending.get(id)
    if (!p) return
    this.#settle(id)
    p.resolve(message)
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

  #settle(id: number): void {
    const p = this.#pending.get(id)
    if (!p) return
    clearTimeout(p.timer)
    this.#pending.delete(id)
  }

  #failPending(reason: string): void {
    for (const [id, p] of [...this.#pending]) {
      this.#settle(id)
      p.resolve(this.unavailable(id, reason))
    }
  }

  async #drop(): Promise<void> {
    const t = this.#transport
    this.#transport = undefined
    if (!t) return
    t.onclose = undefined
    t.onerror = undefined
    await t.close().catch(() => undefined)
  }
}

export function describeError(answer: Message): string {
  const e = answer.error
  if (isRecord(e) && typeof e.message === 'string') return e.message.slice(0, 200)
  return 'no result'
}

/** Whether an answer is the link's own failure (unreachable, timed out), not the backend's. */
export function isLinkFailure(answer: Message): boolean {
  const e = answer.error
  return isRecord(e) && (e.code === BACKEND_UNAVAILABLE || e.code === REQUEST_TIMEOUT)
}
