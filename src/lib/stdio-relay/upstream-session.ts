import {SSEClientTransport} from '@modelcontextprotocol/sdk/client/sse.js'
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type {FetchLike, Transport} from '@modelcontextprotocol/sdk/shared/transport.js'
import type {JSONRPCMessage} from '@modelcontextprotocol/sdk/types.js'
import {isToolgateError} from '../errors.ts'
import type {Logger} from '../log/logger.ts'

/**
 * The HTTP side of `proxy stdio`: one MCP session with the server, over streamable HTTP or the
 * legacy SSE transport (the MCP SDK's client transports, used as raw message pipes — no client
 * logic in between, so every message passes unchanged). It chooses the transport (`auto`: streamable
 * HTTP, then SSE when the first POST gets 404/405, as legacy servers answer), and re-initializes
 * transparently when the server forgets the session (404) by replaying the client's `initialize`.
 */

export type TransportKind = 'auto' | 'streamable-http' | 'sse'

export interface UpstreamOptions {
  url: URL
  kind: TransportKind
  fetch: FetchLike
  logger: Logger
  /** Every message from the server, as received. */
  onMessage: (message: JSONRPCMessage) => void
  /**
   * A workload target (issue 33): where it listens now, asked again on every reconnect, and how
   * long to wait for it to come back (a `stop`/`run` or a restart) before a request fails.
   */
  follow?: {resolve: () => Promise<FollowedTarget>; timeoutMs: number}
}

/** Where a followed workload is now, and which run of it (its supervisor process). */
export interface FollowedTarget {
  url: URL
  /** Changes when the workload is stopped and run again, even on the same port. */
  identity: string
}

const REPLAY_ID = '__toolgate_reinitialize'
const RETRIES = 5
const NO_RECONNECT = {
  maxRetries: 0,
  initialReconnectionDelay: 1000,
  maxReconnectionDelay: 1000,
  reconnectionDelayGrowFactor: 1,
}

export class UpstreamSession {
  private transport: Transport | undefined
  /** The followed workload run the transport talks to (url + identity). */
  private transportTarget: string | undefined
  private kind: Exclude<TransportKind, 'auto'> | undefined
  private initialize: JSONRPCMessage | undefined
  private initialized = false
  private protocolVersion: string | undefined
  private replay: {resolve: () => void; reject: (err: Error) => void} | undefined
  private reinitializing: Promise<void> | undefined
  private readonly options: UpstreamOptions

  constructor(options: UpstreamOptions) {
    this.options = options
    if (options.kind !== 'auto') this.kind = options.kind
  }

  /** Sends one client message; retried across network blips and a forgotten session. */
  async send(message: JSONRPCMessage): Promise<void> {
    const m = message as {method?: string; id?: unknown}
    if (m.method === 'initialize' && 'id' in m) this.initialize = message
    if (m.method === 'notifications/initialized') this.initialized = true
    const follow = this.options.follow
    const deadline = Date.now() + (follow?.timeoutMs ?? 0)
    for (let attempt = 0; ; attempt++) {
      try {
        await this.reinitializing
        if (follow && this.transport) await this.dropIfMoved(follow)
        const transport = await this.open()
        await transport.send(message)
        return
      } catch (err) {
        const status = err instanceof StreamableHTTPError ? err.code : undefined
        if (
          this.options.kind === 'auto' &&
          this.kind === 'streamable-http' &&
          m.method === 'initialize' &&
          (status === 404 || status === 405)
        ) {
          this.options.logger.info('the server does not speak streamable HTTP; using legacy SSE', {
            status,
          })
          await this.drop()
          this.kind = 'sse'
          continue
        }
        // 404 is what the spec prescribes for an unknown session; some servers (the reference
        // server-everything among them) answer 400 "No valid session ID" instead.
        const more = follow ? Date.now() < deadline : attempt < RETRIES
        const forgotten =
          status === 404 || (status === 400 && /session/i.test((err as Error).message))
        if (forgotten && m.method !== 'initialize' && this.initialize && more) {
          // A failed replay (the server went away again) is retried by the next round.
          await this.reinitialize().catch((e: Error) =>
            this.options.logger.debug('re-initialize failed', {error: e.message}),
          )
          continue
        }
        // Unreachable, or the pipeline's 502/503 while the server restarts or a login finishes;
        // a followed workload that is stopped or not yet running again counts too.
        const transient =
          status === undefined
            ? isNetworkError(err) || (follow !== undefined && isToolgateError(err, 'ERR_NOT_FOUND'))
            : status === 502 || status === 503
        if (transient && more) {
          const delay = Math.min(250 * 2 ** attempt, follow ? 2_000 : 4_000)
          this.options.logger.warn('the server is unreachable; retrying', {
            attempt: attempt + 1,
            delayMs: delay,
          })
          await new Promise((r) => setTimeout(r, delay))
          // An SSE stream does not survive a restart; a followed workload may be elsewhere now.
          if (this.kind === 'sse' || follow) await this.drop()
          continue
        }
        throw err
      }
    }
  }

  /** DELETE the session (streamable HTTP) and close the transport. */
  async close(): Promise<void> {
    const t = this.transport
    if (t instanceof StreamableHTTPClientTransport && t.sessionId) {
      await Promise.race([
        t.terminateSession().catch(() => undefined),
        new Promise((r) => setTimeout(r, 2_000)),
      ])
    }
    await this.drop()
  }

  private async open(): Promise<Transport> {
    if (this.transport) return this.transport
    this.kind ??= 'streamable-http'
    const {fetch} = this.options
    const followed = this.options.follow ? await this.options.follow.resolve() : undefined
    const url = followed?.url ?? this.options.url
    const transport: Transport =
      this.kind === 'sse'
        ? new SSEClientTransport(url, {fetch, eventSourceInit: {fetch}})
        : new StreamableHTTPClientTransport(url, {
            fetch,
            // A followed workload's old address may be someone else's once it stops: the SDK must
            // not reconnect there on its own; the next message re-resolves and re-initializes.
            ...(followed ? {reconnectionOptions: NO_RECONNECT} : {}),
          })
    transport.onmessage = (message) => this.received(message)
    transport.onerror = (err) => this.options.logger.debug('transport error', {error: err.message})
    this.transport = transport
    this.transportTarget = followed ? `${followed.url.href} ${followed.identity}` : undefined
    await transport.start()
    if (this.protocolVersion) transport.setProtocolVersion?.(this.protocolVersion)
    return transport
  }

  private received(message: JSONRPCMessage): void {
    const m = message as {
      id?: unknown
      result?: {protocolVersion?: unknown}
      error?: {message?: string}
    }
    if (m.id === REPLAY_ID) {
      if (m.result) this.replay?.resolve()
      else
        this.replay?.reject(new Error(`the server refused to re-initialize: ${m.error?.message}`))
      return
    }
    if (typeof m.result?.protocolVersion === 'string' && this.isInitializeAnswer(m.id)) {
      this.protocolVersion = m.result.protocolVersion
      this.transport?.setProtocolVersion?.(this.protocolVersion)
    }
    this.options.onMessage(message)
  }

  private isInitializeAnswer(id: unknown): boolean {
    return this.initialize !== undefined && (this.initialize as {id?: unknown}).id === id
  }

  /**
   * A followed workload is asked where it is before each message (a state-file read, well under a
   * millisecond): once it has stopped, moved or been run again, its old address may be anyone's.
   */
  private async dropIfMoved(follow: NonNullable<UpstreamOptions['follow']>): Promise<void> {
    const now = await follow.resolve().catch(() => undefined)
    // Stopped, moved or run again: nothing is sent to the old address, which may now be another
    // program's. open() asks again (and waits while the workload is down).
    if (!now || `${now.url.href} ${now.identity}` !== this.transportTarget) {
      this.options.logger.info(
        now ? 'the workload changed; reconnecting' : 'the workload is gone; waiting',
        {
          ...(now ? {url: now.url.href} : {}),
        },
      )
      await this.drop()
    }
  }

  /** The server forgot our session: a new one, set up with the client's own initialize. */
  private reinitialize(): Promise<void> {
    this.reinitializing ??= (async () => {
      this.options.logger.warn(
        'the server forgot the session (404); re-initializing with the client initialize',
      )
      await this.drop()
      const transport = await this.open()
      const answered = new Promise<void>((resolve, reject) => (this.replay = {resolve, reject}))
      await transport.send({...(this.initialize as object), id: REPLAY_ID} as JSONRPCMessage)
      await answered
      if (this.initialized)
        await transport.send({jsonrpc: '2.0', method: 'notifications/initialized'})
    })().finally(() => {
      this.reinitializing = undefined
      this.replay = undefined
    })
    return this.reinitializing
  }

  private async drop(): Promise<void> {
    const t = this.transport
    this.transport = undefined
    if (t) {
      t.onclose = undefined
      await t.close().catch(() => undefined)
    }
  }
}

function isNetworkError(err: unknown): boolean {
  const text = `${(err as Error)?.message} ${String((err as {cause?: unknown})?.cause)}`
  return /fetch failed|ECONNREFUSED|ECONNRESET|socket hang up|other side closed|UND_ERR/.test(text)
}
