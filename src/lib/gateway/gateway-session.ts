import {setTimeout as sleep} from 'node:timers/promises'
import type {ClientSink} from '../bridge/multiplexer.ts'
import {isRecord, type JsonRpcId} from '../mcp/json-rpc.ts'
import {LATEST_PROTOCOL_VERSION, versionFor} from '../mcp/protocol-versions.ts'
import type {Logger} from '../log/logger.ts'
import {BackendLink, type ClientHello, type LinkEvents, type Message} from './backend-link.ts'
import type {BackendTarget} from './backend-target.ts'
import type {BackendConfig} from './config.ts'
import type {BackendHealth} from './health.ts'
import {
  CHANGED_LISTS,
  exposeItem,
  LIST_CAPABILITY,
  LIST_METHODS,
  mergeSorted,
  pageOf,
  prefixResultUris,
  type Item,
  type ListKind,
} from './merged-lists.ts'
import {prefixedUri, splitName, splitUri} from './names.ts'
import {originalToolName} from './shaping.ts'

/**
 * One client session of a gateway (issue 37) and, behind it, one session per backend. Requests
 * are answered from the merged lists or routed by prefix to the backend that owns the name, under
 * the backend's own name; answers, progress and cancellations travel back to this session only.
 * A backend's own requests (sampling, elicitation, roots) reach this session — the one its link
 * belongs to — and only this session's answer goes back to that backend.
 */

export interface GatewayBackend {
  config: BackendConfig
  target: BackendTarget
  health: BackendHealth
}

export interface SessionDeps {
  backends: GatewayBackend[]
  pageSize: number
  logger: Logger
  requestTimeoutMs: number
  connectTimeoutMs: number
  serverInfo: {name: string; version: string}
}

interface InFlight {
  clientId: JsonRpcId
  link?: BackendLink
  linkId?: number
  progressToken?: unknown
  cancelled?: boolean
}

const MAX_PAGES = 50
const MAX_ITEMS = 10_000
/** Requests of one session in flight at once (each holds a backend request and a timer). */
const MAX_IN_FLIGHT = 1_000
const TOO_MANY_REQUESTS = -32003
/** Backend requests this session may owe answers to at once. */
const MAX_OWED = 1_000
const INVALID_PARAMS = -32602
/** A link lost this soon after it came up is flapping: it waits for the backend's probe. */
const FLAPPING_MS = 10_000
const CHANGE_COALESCE_MS = 50
const METHOD_NOT_FOUND = -32601
const LIST_NOTIFICATION: Readonly<Record<string, string>> = {
  tools: 'notifications/tools/list_changed',
  prompts: 'notifications/prompts/list_changed',
  resources: 'notifications/resources/list_changed',
}

const keyOf = (id: unknown) => `${typeof id}:${String(id)}`

export class GatewaySession {
  readonly id: string
  readonly #sink: ClientSink
  readonly #deps: SessionDeps
  readonly #links: BackendLink[]
  readonly #byPrefix = new Map<string, BackendLink>()
  readonly #health = new Map<BackendLink, BackendHealth>()
  readonly #inflight = new Map<string, InFlight>()
  readonly #owes = new Map<
    string,
    {link: BackendLink; backendId: JsonRpcId; timer: NodeJS.Timeout}
  >()
  /** Each link's lists as the client sees them, while the backend promises list_changed. */
  readonly #lists = new Map<BackendLink, Map<ListKind, Item[]>>()
  readonly #fetching = new Map<string, Promise<Item[]>>()
  /** How often each link was lost soon after it came up, in a row (its reconnect pause grows). */
  readonly #flaps = new Map<BackendLink, number>()
  /** Bumped when a link's lists go stale: a fetch that started before is not cached. */
  readonly #listVersion = new Map<BackendLink, number>()
  #hello: ClientHello | undefined
  #initialized = false
  /** Aborted when the session ends: waits for a backend to come back stop with it. */
  readonly #ended = new AbortController()
  /** list_changed notifications about to be sent (several causes at once send one). */
  readonly #changes = new Map<string, NodeJS.Timeout>()
  #closed = false
  #nextOwed = 1

  constructor(id: string, sink: ClientSink, deps: SessionDeps) {
    this.id = id
    this.#sink = sink
    this.#deps = deps
    const events: LinkEvents = {
      onRequest: (link, m) => this.#requestFromBackend(link, m),
      onNotification: (link, m) => this.#notificationFromBackend(link, m),
      onLost: (link, reason) => this.#lost(link, reason),
    }
    this.#links = deps.backends.map((b) => {
      const link = new BackendLink(b.config, b.target, events, {
        logger: deps.logger,
        requestTimeoutMs: deps.requestTimeoutMs,
        connectTimeoutMs: deps.connectTimeoutMs,
      })
      this.#byPrefix.set(b.config.prefix, link)
      this.#health.set(link, b.health)
      return link
    })
  }

  /** Backends this session is connected to now. */
  get connected(): string[] {
    return this.#links.filter((l) => l.up).map((l) => l.backend.name)
  }

  fromClient(message: Message): void {
    if (this.#closed) return
    const method = message.method
    if (typeof method !== 'string') return this.#answerFromClient(message)
    if (!('id' in message)) return this.#notificationFromClient(method, message.params)
    const clientId = message.id as JsonRpcId
    // One request per id at a time (legacy SSE does not check): a second would take the first's
    // progress, cancellation and answer, and slip past the bound below.
    if (this.#inflight.has(keyOf(clientId)))
      return this.#sink.deliver(errorAnswer(clientId, -32600, 'id already in use'), clientId)
    if (this.#inflight.size >= MAX_IN_FLIGHT) {
      const busy = errorAnswer(
        clientId,
        TOO_MANY_REQUESTS,
        'too many requests in flight in this session',
      )
      return this.#sink.deliver(busy, clientId)
    }
    const entry: InFlight = {clientId}
    this.#inflight.set(keyOf(clientId), entry)
    this.#serve(entry, method, isRecord(message.params) ? message.params : {})
      .catch((err: Error) => {
        this.#deps.logger.warn('gateway request failed', {method, error: err.message})
        return errorAnswer(clientId, -32603, 'Internal error')
      })
      .then((answer) => {
        this.#inflight.delete(keyOf(clientId))
        if (!entry.cancelled && !this.#closed) this.#sink.deliver(answer, clientId)
      })
  }

  /** The client stopped waiting for `clientId` (its stream closed). */
  abandon(clientId: JsonRpcId, reason = 'client disconnected'): void {
    this.#cancel(clientId, reason)
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#ended.abort()
    for (const entry of this.#inflight.values()) entry.cancelled = true
    for (const owed of this.#owes.values()) clearTimeout(owed.timer)
    this.#owes.clear()
    for (const timer of this.#changes.values()) clearTimeout(timer)
    await Promise.all(this.#links.map((l) => l.close()))
  }

  async #serve(entry: InFlight, method: string, params: Record<string, unknown>): Promise<Message> {
    const id = entry.clientId
    if (method === 'initialize') {
      if (this.#hello) return errorAnswer(id, -32600, 'this session is already initialized')
      return {jsonrpc: '2.0', id, result: await this.#initialize(params)}
    }
    if (method === 'ping') return {jsonrpc: '2.0', id, result: {}}
    const kind = LIST_METHODS[method]
    if (kind) return this.#list(id, kind, params)
    if (method === 'tools/call') {
      const name = params.name
      const found = typeof name === 'string' ? this.#byName(name) : undefined
      const original = found && originalToolName(found[0].backend.tools, found[1])
      if (!found || original === undefined)
        return errorAnswer(id, INVALID_PARAMS, `Unknown tool: ${String(name).slice(0, 200)}`)
      return this.#forward(entry, found[0], method, {...params, name: original})
    }
    if (method === 'prompts/get') {
      const found = typeof params.name === 'string' ? this.#byName(params.name) : undefined
      if (!found)
        return errorAnswer(
          id,
          INVALID_PARAMS,
          `Unknown prompt: ${String(params.name).slice(0, 200)}`,
        )
      return this.#forward(entry, found[0], method, {...params, name: found[1]})
    }
    if (
      method === 'resources/read' ||
      method === 'resources/subscribe' ||
      method === 'resources/unsubscribe'
    ) {
      const found = typeof params.uri === 'string' ? this.#byUri(params.uri) : undefined
      // MCP "Resources", error handling: -32002 for a resource that is not found.
      if (!found) return errorAnswer(id, -32002, 'Resource not found')
      return this.#forward(entry, found[0], method, {...params, uri: found[1]})
    }
    if (method === 'completion/complete') return this.#complete(entry, params)
    if (method === 'logging/setLevel') {
      const links = this.#links.filter((l) => l.up && isRecord(l.info?.capabilities.logging))
      await Promise.all(links.map((l) => l.request(method, params)))
      return {jsonrpc: '2.0', id, result: {}}
    }
    return errorAnswer(id, METHOD_NOT_FOUND, `Method not found: ${method.slice(0, 100)}`)
  }

  async #initialize(params: Record<string, unknown>): Promise<Record<string, unknown>> {
    const asked = typeof params.protocolVersion === 'string' ? params.protocolVersion : undefined
    this.#hello = {
      protocolVersion: asked ?? LATEST_PROTOCOL_VERSION,
      capabilities: isRecord(params.capabilities) ? params.capabilities : {},
      clientInfo: isRecord(params.clientInfo) ? params.clientInfo : {name: 'unknown', version: '0'},
    }
    await Promise.all(this.#links.map((l) => this.#connect(l)))
    const up = this.#links.filter((l) => l.up)
    const capabilities: Record<string, unknown> = {
      // Always offered: a backend that is down now may come back with its lists (list_changed).
      tools: {listChanged: true},
      prompts: {listChanged: true},
      resources: {
        listChanged: true,
        ...(up.some((l) => hasFlag(l, 'resources', 'subscribe')) ? {subscribe: true} : {}),
      },
    }
    if (up.some((l) => isRecord(l.info?.capabilities.logging))) capabilities.logging = {}
    if (up.some((l) => isRecord(l.info?.capabilities.completions))) capabilities.completions = {}
    const instructions = up
      .filter((l) => l.info?.instructions)
      .map(
        (l) =>
          `## ${l.backend.name} (names prefixed ${l.backend.prefix}__)\n${l.info!.instructions}`,
      )
    this.#deps.logger.info('client initialized', {
      client: isRecord(params.clientInfo) ? String(params.clientInfo.name).slice(0, 80) : 'unknown',
      backends: up.map((l) => l.backend.name).join(',') || 'none',
    })
    return {
      protocolVersion: versionFor(asked, LATEST_PROTOCOL_VERSION),
      capabilities,
      serverInfo: this.#deps.serverInfo,
      ...(instructions.length ? {instructions: instructions.join('\n\n')} : {}),
    }
  }

  async #connect(link: BackendLink): Promise<boolean> {
    const hello = this.#hello
    if (!hello || this.#closed) return false
    try {
      await link.connect(hello)
      // The session ended while the backend answered: its new session ends too.
      if (this.#closed) {
        await link.close()
        return false
      }
      this.#stale(link)
      return true
    } catch (err) {
      // Closed, or a newer connect of this link took over: that one decides.
      if (this.#closed || (err as Error).message === 'superseded') return false
      this.#deps.logger.warn('backend not connected', {
        backend: link.backend.name,
        error: (err as Error).message.slice(0, 300),
      })
      link.down((err as Error).message)
      void this.#waitFor(link)
      return false
    }
  }

  /** Waits for the backend to come back, reconnects and tells the client its lists changed. */
  async #waitFor(link: BackendLink, pauseMs = 0): Promise<void> {
    if (pauseMs > 0)
      await sleep(pauseMs, undefined, {signal: this.#ended.signal}).catch(() => undefined)
    if (this.#closed || !(await this.#health.get(link)!.whenUp(this.#ended.signal))) return
    if (this.#closed || link.up) return
    if (await this.#connect(link)) this.#listsChanged(link)
  }

  /** A backend's link failed: its calls fail now, its items leave the lists until it is back. */
  #lost(link: BackendLink, reason: string): void {
    if (this.#closed) return
    link.down(reason)
    for (const [id, owed] of this.#owes)
      if (owed.link === link) {
        clearTimeout(owed.timer)
        this.#owes.delete(id)
      }
    this.#stale(link)
    this.#listsChanged(link)
    // Once at once — the backend restarted and forgot us, or a connection broke — unless this link
    // came up only moments ago: then the probe decides when to try again (no reconnect storm).
    if (Date.now() - link.upSince >= FLAPPING_MS) {
      this.#flaps.delete(link)
      void this.#connect(link).then((ok) => ok && this.#listsChanged(link))
      return
    }
    // Lost again soon after connecting: each time a longer pause (with jitter, so sessions woken
    // by the same probe do not come back together), up to a minute.
    const flaps = (this.#flaps.get(link) ?? 0) + 1
    this.#flaps.set(link, flaps)
    const pause = Math.min(1_000 * 2 ** (flaps - 1), 60_000)
    void this.#waitFor(link, pause / 2 + Math.random() * (pause / 2))
  }

  #listsChanged(link: BackendLink): void {
    for (const cap of ['tools', 'prompts', 'resources'])
      if (link.info === undefined || isRecord(link.info.capabilities[cap]))
        this.#notifyChanged(LIST_NOTIFICATION[cap]!)
  }

  /** Sends `notifications/<kind>/list_changed` shortly; causes meanwhile join the same one. */
  #notifyChanged(method: string): void {
    if (!this.#initialized || this.#closed || this.#changes.has(method)) return
    const timer = setTimeout(() => {
      this.#changes.delete(method)
      if (!this.#closed) this.#sink.deliver({jsonrpc: '2.0', method}, undefined)
    }, CHANGE_COALESCE_MS)
    this.#changes.set(method, timer)
  }

  #stale(link: BackendLink, kinds?: ListKind[]): void {
    this.#listVersion.set(link, (this.#listVersion.get(link) ?? 0) + 1)
    const lists = this.#lists.get(link)
    if (!lists) return
    if (!kinds) lists.clear()
    else for (const k of kinds) lists.delete(k)
  }

  async #list(id: JsonRpcId, kind: ListKind, params: Record<string, unknown>): Promise<Message> {
    const links = this.#links.filter(
      (l) => l.up && isRecord(l.info?.capabilities[LIST_CAPABILITY[kind]]),
    )
    const parts = await Promise.all(links.map((l) => this.#itemsOf(l, kind)))
    const page = pageOf(kind, mergeSorted(kind, parts), params.cursor, this.#deps.pageSize)
    if ('error' in page) return errorAnswer(id, INVALID_PARAMS, `Invalid params: ${page.error}`)
    const result = {[kind]: page.items, ...(page.nextCursor ? {nextCursor: page.nextCursor} : {})}
    return {jsonrpc: '2.0', id, result}
  }

  /** One backend's whole list (every page), exposed; cached while the backend promises list_changed. */
  #itemsOf(link: BackendLink, kind: ListKind): Promise<Item[]> {
    const cached = this.#lists.get(link)?.get(kind)
    if (cached) return Promise.resolve(cached)
    // Lists asked for at once (the client's, Cedar's annotation fetch) share one fetch.
    // A fetch that began before the list went stale is not joined (its answer is the old list).
    const key = `${link.backend.name}\n${kind}\n${this.#listVersion.get(link) ?? 0}`
    const running = this.#fetching.get(key)
    if (running) return running
    const fetching = this.#fetchList(link, kind).finally(() => {
      if (this.#fetching.get(key) === fetching) this.#fetching.delete(key)
    })
    this.#fetching.set(key, fetching)
    return fetching
  }

  async #fetchList(link: BackendLink, kind: ListKind): Promise<Item[]> {
    const version = this.#listVersion.get(link) ?? 0
    const method = Object.keys(LIST_METHODS).find((m) => LIST_METHODS[m] === kind)!
    const items: Item[] = []
    let cursor: string | undefined
    for (let page = 0; page < MAX_PAGES && items.length < MAX_ITEMS; page++) {
      const answer = await link.request(method, cursor === undefined ? {} : {cursor})
      const result = answer.result
      if (!isRecord(result) || !Array.isArray(result[kind])) {
        this.#deps.logger.info('backend list failed', {backend: link.backend.name, method})
        return items
      }
      for (const raw of result[kind] as unknown[]) {
        const item = exposeItem(kind, link.backend, raw)
        if (item && items.length < MAX_ITEMS) items.push(item)
      }
      cursor =
        typeof result.nextCursor === 'string' && result.nextCursor ? result.nextCursor : undefined
      if (cursor === undefined) break
    }
    if (
      hasFlag(link, LIST_CAPABILITY[kind], 'listChanged') &&
      link.hearsChanges &&
      version === (this.#listVersion.get(link) ?? 0)
    ) {
      let lists = this.#lists.get(link)
      if (!lists) this.#lists.set(link, (lists = new Map()))
      lists.set(kind, items)
    }
    return items
  }

  async #forward(
    entry: InFlight,
    link: BackendLink,
    method: string,
    params: Record<string, unknown>,
  ): Promise<Message> {
    const id = entry.clientId
    if (!link.up) return link.unavailable(id)
    entry.link = link
    const meta = params._meta
    if (isRecord(meta) && meta.progressToken !== undefined) entry.progressToken = meta.progressToken
    const answer = await link.request(method, params, (linkId) => (entry.linkId = linkId))
    if ('result' in answer) {
      const result =
        method === 'tools/call' || method === 'resources/read' || method === 'prompts/get'
          ? prefixResultUris(link.backend.prefix, answer.result)
          : answer.result
      return {jsonrpc: '2.0', id, result}
    }
    return {jsonrpc: '2.0', id, error: answer.error}
  }

  async #complete(entry: InFlight, params: Record<string, unknown>): Promise<Message> {
    const ref = params.ref
    const id = entry.clientId
    if (isRecord(ref) && ref.type === 'ref/prompt' && typeof ref.name === 'string') {
      const found = this.#byName(ref.name)
      if (found)
        return this.#forward(entry, found[0], 'completion/complete', {
          ...params,
          ref: {...ref, name: found[1]},
        })
    } else if (isRecord(ref) && ref.type === 'ref/resource' && typeof ref.uri === 'string') {
      const found = this.#byUri(ref.uri)
      if (found)
        return this.#forward(entry, found[0], 'completion/complete', {
          ...params,
          ref: {...ref, uri: found[1]},
        })
    }
    return errorAnswer(id, INVALID_PARAMS, 'Invalid params: ref names no known prompt or resource')
  }

  #byName(exposed: string): [BackendLink, string] | undefined {
    const split = splitName(exposed)
    const link = split && this.#byPrefix.get(split[0])
    return link && split ? [link, split[1]] : undefined
  }

  #byUri(exposed: string): [BackendLink, string] | undefined {
    const split = splitUri(exposed)
    const link = split && this.#byPrefix.get(split[0])
    return link && split ? [link, split[1]] : undefined
  }

  #cancel(clientId: unknown, reason: string): void {
    const entry = this.#inflight.get(keyOf(clientId))
    if (!entry) return
    entry.cancelled = true
    if (entry.link && entry.linkId !== undefined) entry.link.cancel(entry.linkId, reason)
  }

  #notificationFromClient(method: string, params: unknown): void {
    const p = isRecord(params) ? params : {}
    if (method === 'notifications/initialized') this.#initialized = true
    else if (method === 'notifications/cancelled')
      this.#cancel(p.requestId, typeof p.reason === 'string' ? p.reason : 'cancelled by the client')
    else if (method === 'notifications/roots/list_changed')
      for (const l of this.#links) if (l.up) void l.notify(method)
  }

  /** The client answers a backend's request: only to the backend that asked, under its own id. */
  #answerFromClient(message: Message): void {
    const id = message.id
    const owed = typeof id === 'string' ? this.#owes.get(id) : undefined
    if (!owed) {
      this.#deps.logger.warn('dropped an answer to a request this session was not asked', {
        session: this.id.slice(0, 8),
      })
      return
    }
    this.#owes.delete(id as string)
    clearTimeout(owed.timer)
    void owed.link.answer(
      owed.backendId,
      'result' in message ? {result: message.result} : {error: message.error},
    )
  }

  #requestFromBackend(link: BackendLink, message: Message): void {
    const backendId = message.id as JsonRpcId
    if (this.#closed || this.#owes.size >= MAX_OWED) {
      void link.answer(backendId, {
        error: {code: -32603, message: 'the client cannot take more requests'},
      })
      return
    }
    const id = `${link.backend.prefix}-${this.#nextOwed++}`
    // A client that never answers (it has no stream open, it ignores the method) does not hold
    // the backend, or this session's share of owed requests, forever.
    const timer = setTimeout(() => {
      if (!this.#owes.delete(id)) return
      void link.answer(backendId, {
        error: {code: -32001, message: 'the client did not answer in time'},
      })
    }, this.#deps.requestTimeoutMs)
    this.#owes.set(id, {link, backendId, timer})
    // On the stream of the newest request this backend is working on, when there is one: that is
    // the call that caused it (a client listens there); else on the session's standalone stream.
    let related: JsonRpcId | undefined
    for (const entry of this.#inflight.values()) if (entry.link === link) related = entry.clientId
    this.#sink.deliver({...message, id}, related)
  }

  #notificationFromBackend(link: BackendLink, message: Message): void {
    if (this.#closed) return
    const method = message.method as string
    const params = isRecord(message.params) ? message.params : {}
    const changed = CHANGED_LISTS[method]
    if (changed) {
      this.#stale(link, changed)
      return this.#notifyChanged(method)
    }
    if (method === 'notifications/progress') {
      for (const entry of this.#inflight.values())
        if (entry.link === link && entry.progressToken === params.progressToken && !entry.cancelled)
          return this.#sink.deliver(message, entry.clientId)
      return
    }
    if (method === 'notifications/cancelled') {
      for (const [id, owed] of this.#owes)
        if (owed.link === link && owed.backendId === params.requestId) {
          clearTimeout(owed.timer)
          this.#owes.delete(id)
          return this.#sink.deliver({...message, params: {...params, requestId: id}}, undefined)
        }
      return
    }
    if (method === 'notifications/resources/updated' && typeof params.uri === 'string') {
      const uri = prefixedUri(link.backend.prefix, params.uri)
      return this.#sink.deliver({...message, params: {...params, uri}}, undefined)
    }
    this.#sink.deliver(message, undefined)
  }
}

function hasFlag(link: BackendLink, capability: string, flag: string): boolean {
  const c = link.info?.capabilities[capability]
  return isRecord(c) && c[flag] === true
}

function errorAnswer(id: JsonRpcId, code: number, message: string): Message {
  return {jsonrpc: '2.0', id, error: {code, message}}
}
