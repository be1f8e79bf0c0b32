import type {IncomingMessage, ServerResponse} from 'node:http'
import {toJsonRpcMessage} from '../mcp/json-rpc.ts'
import {answerJson, parseMessages} from './http-common.ts'
import type {BridgeLane} from './lane.ts'
import {errorMessage, type Message} from './multiplexer.ts'
import {SseWriter} from './sse-writer.ts'
import {
  closeSession,
  findSession,
  openSession,
  ownerOf,
  type BridgeContext,
  type BridgeSession,
} from './bridge-sessions.ts'

/**
 * The legacy HTTP+SSE transport (MCP 2024-11-05) for older clients: `GET /sse` opens a session
 * whose first event, `endpoint`, names where to POST (`/messages?sessionId=…`); every message to
 * the client, answers included, travels on that one stream; a POST is acknowledged with 202.
 * The session belongs to the principal that opened the stream (bridge-sessions.ts).
 */
class SseSession implements BridgeSession {
  writer: SseWriter | undefined
  lane: BridgeLane | undefined = undefined
  readonly id: string
  private readonly onEnd: (session: SseSession) => void

  constructor(id: string, onEnd: (session: SseSession) => void) {
    this.id = id
    this.onEnd = onEnd
  }

  busy(): boolean {
    return this.writer !== undefined && !this.writer.closed
  }

  deliver(message: Message): void {
    this.writer?.send(message)
  }

  end(): void {
    this.writer?.end()
    this.onEnd(this)
  }
}

export class LegacySseEndpoint {
  private readonly ctx: BridgeContext

  constructor(ctx: BridgeContext) {
    this.ctx = ctx
  }

  async open(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'GET') {
      res.setHeader('allow', 'GET')
      return answerJson(res, 405, errorMessage(null, -32000, 'Method not allowed'))
    }
    const session = await openSession(
      this.ctx,
      ownerOf(req),
      res,
      (id) => new SseSession(id, (s) => closeSession(this.ctx, s, 'client disconnected')),
    )
    if (!session) return
    if (res.destroyed) return session.end() // the client left while its server was starting
    session.writer = new SseWriter(res, {}, this.ctx.budget)
    res.on('close', () => session.end())
    session.writer.sendRaw('endpoint', `/messages?sessionId=${session.id}`)
  }

  async message(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST')
      return answerJson(res, 405, errorMessage(null, -32000, 'Method not allowed'))
    }
    const id = url.searchParams.get('sessionId') ?? ''
    const session = findSession<SseSession>(this.ctx, id, req, res)
    if (!session) return
    const parsed = await parseMessages(req, res, this.ctx.maxBodyBytes)
    if (!parsed) return
    const requests = parsed.messages.filter((m) => {
      const kind = toJsonRpcMessage(m)
      return kind.ok && kind.message.kind === 'request' && m.method !== 'initialize'
    })
    if (requests.length > 0) this.ctx.table.markUsed(id)
    for (const m of parsed.messages) session.lane!.mux.fromClient(id, m)
    res.writeHead(202, {'content-type': 'text/plain'}).end('Accepted')
  }
}
