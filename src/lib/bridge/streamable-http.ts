import type {IncomingMessage, ServerResponse} from 'node:http'
import {toJsonRpcMessage, type JsonRpcId} from '../mcp/json-rpc.ts'
import {errorMessage, type Message} from './multiplexer.ts'
import {SseWriter} from './sse-writer.ts'
import {answerJson, parseMessages} from './http-common.ts'
import type {BridgeLane} from './lane.ts'
import {
  closeSession,
  findSession,
  openSession,
  ownerOf,
  type BridgeContext,
  type BridgeSession,
} from './bridge-sessions.ts'

/**
 * MCP streamable HTTP (spec 2025-06-18 "Transports") at `/mcp` for the stdio bridge: POST carries
 * client messages and answers either as one JSON body or as an SSE stream (by `Accept`), GET opens
 * the session's standalone stream for server-initiated messages, DELETE ends the session. Sessions
 * belong to the principal that initialized them (bridge-sessions.ts).
 */

/** The answer to one POST that carried requests: ends when every request in it is answered. */
class PostAnswer {
  private readonly collected: Message[] = []
  private finished = false

  readonly remaining: Set<JsonRpcId>
  private readonly res: ServerResponse
  private readonly sse: SseWriter | undefined
  private readonly batch: boolean
  private readonly session: HttpSession

  constructor(
    remaining: Set<JsonRpcId>,
    res: ServerResponse,
    sse: SseWriter | undefined,
    batch: boolean,
    session: HttpSession,
  ) {
    this.remaining = remaining
    this.res = res
    this.sse = sse
    this.batch = batch
    this.session = session
  }

  deliver(message: Message): void {
    if (this.finished) return
    const isAnswer = typeof message.method !== 'string'
    if (this.sse) this.sse.send(message)
    else if (isAnswer) this.collected.push(message)
    else this.session.toStandalone(message)
    if (isAnswer && this.remaining.delete(message.id as JsonRpcId)) {
      this.session.streams.delete(message.id as JsonRpcId)
      if (this.remaining.size === 0) this.finish()
    }
  }

  finish(): void {
    if (this.finished) return
    this.finished = true
    if (this.sse) return this.sse.end()
    const body = this.batch ? this.collected : this.collected[0]
    answerJson(this.res, 200, body ?? [], {'mcp-session-id': this.session.id})
  }

  get done(): boolean {
    return this.finished
  }
}

class HttpSession implements BridgeSession {
  readonly streams = new Map<JsonRpcId, PostAnswer>()
  standalone: SseWriter | undefined
  lane: BridgeLane | undefined = undefined

  readonly id: string
  private readonly onEnd: (session: HttpSession) => void

  constructor(id: string, onEnd: (session: HttpSession) => void) {
    this.id = id
    this.onEnd = onEnd
  }

  busy(): boolean {
    return this.streams.size > 0 || (this.standalone !== undefined && !this.standalone.closed)
  }

  deliver(message: Message, related: JsonRpcId | undefined): void {
    const post = related === undefined ? undefined : this.streams.get(related)
    if (post) post.deliver(message)
    else this.toStandalone(message)
  }

  /** Messages with no request stream to ride on; dropped when the client opened no GET stream. */
  toStandalone(message: Message): void {
    this.standalone?.send(message)
  }

  end(): void {
    this.standalone?.end()
    for (const post of this.streams.values()) post.finish()
    this.streams.clear()
    this.onEnd(this)
  }
}

export class StreamableHttpEndpoint {
  private readonly ctx: BridgeContext

  constructor(ctx: BridgeContext) {
    this.ctx = ctx
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method === 'POST') return this.post(req, res)
    if (req.method === 'GET') return this.get(req, res)
    if (req.method === 'DELETE') return this.delete(req, res)
    res.setHeader('allow', 'GET, POST, DELETE')
    answerJson(res, 405, errorMessage(null, -32000, 'Method not allowed'))
  }

  private async post(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const parsed = await parseMessages(req, res, this.ctx.maxBodyBytes)
    if (!parsed) return
    const {messages, batch} = parsed
    const init = messages.find((m) => m.method === 'initialize' && 'id' in m)
    let session: HttpSession | undefined
    if (init) {
      if (messages.length > 1 || req.headers['mcp-session-id'] !== undefined) {
        return answerJson(
          res,
          400,
          errorMessage(null, -32600, 'initialize must be sent alone and without Mcp-Session-Id'),
        )
      }
      session = await openSession(
        this.ctx,
        ownerOf(req),
        res,
        (id) => new HttpSession(id, (s) => closeSession(this.ctx, s, 'session ended')),
      )
      if (!session) return
    } else {
      session = this.sessionOf(req, res)
      if (!session) return
    }
    const mux = session.lane!.mux
    const requestIds = new Set<JsonRpcId>()
    for (const m of messages) {
      const kind = toJsonRpcMessage(m)
      if (kind.ok && kind.message.kind === 'request') {
        if (session.streams.has(kind.message.id) || requestIds.has(kind.message.id)) {
          return answerJson(res, 400, errorMessage(kind.message.id, -32600, 'id already in use'))
        }
        requestIds.add(kind.message.id)
      }
    }
    if (requestIds.size > 0 && !init) this.ctx.table.markUsed(session.id)
    if (requestIds.size === 0) {
      for (const m of messages) mux.fromClient(session.id, m)
      res.writeHead(202, {'mcp-session-id': session.id}).end()
      return
    }
    const accept = String(req.headers.accept ?? '')
    const sse = accept.includes('text/event-stream')
    if (!sse && accept !== '' && !/application\/json|\*\/\*/.test(accept)) {
      return answerJson(
        res,
        406,
        errorMessage(null, -32000, 'Accept must allow application/json or text/event-stream'),
      )
    }
    const writer = sse
      ? new SseWriter(res, {'mcp-session-id': session.id}, this.ctx.budget)
      : undefined
    const answer = new PostAnswer(requestIds, res, writer, batch, session)
    for (const id of requestIds) session.streams.set(id, answer)
    res.on('close', () => {
      if (answer.done) return
      // The client stopped listening: its requests are cancelled on the server.
      for (const id of answer.remaining) {
        session.streams.delete(id)
        mux.abandon(session.id, id)
      }
    })
    for (const m of messages) mux.fromClient(session.id, m)
  }

  private get(req: IncomingMessage, res: ServerResponse): void {
    if (!String(req.headers.accept ?? '').includes('text/event-stream')) {
      return answerJson(res, 406, errorMessage(null, -32000, 'Accept must allow text/event-stream'))
    }
    const session = this.sessionOf(req, res)
    if (!session) return
    if (session.standalone && !session.standalone.closed) {
      return answerJson(
        res,
        409,
        errorMessage(null, -32000, 'this session already has a standalone stream'),
      )
    }
    session.standalone = new SseWriter(res, {'mcp-session-id': session.id}, this.ctx.budget)
  }

  private delete(req: IncomingMessage, res: ServerResponse): void {
    const session = this.sessionOf(req, res)
    if (!session) return
    session.end()
    res.writeHead(200).end()
  }

  private sessionOf(req: IncomingMessage, res: ServerResponse): HttpSession | undefined {
    const id = req.headers['mcp-session-id']
    if (typeof id !== 'string' || id === '') {
      answerJson(res, 400, errorMessage(null, -32000, 'Mcp-Session-Id header is required'))
      return undefined
    }
    return findSession<HttpSession>(this.ctx, id, req, res)
  }
}
