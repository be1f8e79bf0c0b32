import {randomUUID} from 'node:crypto'
import type {IncomingMessage, ServerResponse} from 'node:http'
import {answerJson, parseMessages, type BridgeLimits} from './http-common.ts'
import {errorMessage, type ClientSink, type Message, type Multiplexer} from './multiplexer.ts'
import {SseWriter} from './sse-writer.ts'

/**
 * The legacy HTTP+SSE transport (MCP 2024-11-05) for older clients: `GET /sse` opens a session
 * whose first event, `endpoint`, names where to POST (`/messages?sessionId=…`); every message to
 * the client, answers included, travels on that one stream; a POST is acknowledged with 202.
 */
class SseSession implements ClientSink {
  private readonly writer: SseWriter
  private readonly onEnd: () => void

  constructor(writer: SseWriter, onEnd: () => void) {
    this.writer = writer
    this.onEnd = onEnd
  }

  deliver(message: Message): void {
    this.writer.send(message)
  }

  end(): void {
    this.writer.end()
    this.onEnd()
  }
}

export class LegacySseEndpoint {
  private readonly sessions = new Map<string, SseSession>()

  private readonly mux: Multiplexer
  private readonly limits: BridgeLimits

  constructor(mux: Multiplexer, limits: BridgeLimits) {
    this.mux = mux
    this.limits = limits
  }

  open(req: IncomingMessage, res: ServerResponse): void {
    if (req.method !== 'GET') {
      res.setHeader('allow', 'GET')
      return answerJson(res, 405, errorMessage(null, -32000, 'Method not allowed'))
    }
    if (this.sessions.size >= this.limits.maxSessions) {
      res.setHeader('retry-after', '5')
      return answerJson(res, 503, errorMessage(null, -32000, 'too many sessions'))
    }
    const id = randomUUID()
    const writer = new SseWriter(res)
    const session = new SseSession(writer, () => this.sessions.delete(id))
    this.sessions.set(id, session)
    this.mux.open(id, session)
    res.on('close', () => {
      this.sessions.delete(id)
      this.mux.close(id)
    })
    writer.sendRaw('endpoint', `/messages?sessionId=${id}`)
  }

  async message(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST')
      return answerJson(res, 405, errorMessage(null, -32000, 'Method not allowed'))
    }
    const id = url.searchParams.get('sessionId') ?? ''
    if (!this.sessions.has(id)) {
      return answerJson(res, 404, errorMessage(null, -32001, 'Session not found'))
    }
    const parsed = await parseMessages(req, res, this.limits.maxBodyBytes)
    if (!parsed) return
    for (const m of parsed.messages) this.mux.fromClient(id, m)
    res.writeHead(202, {'content-type': 'text/plain'}).end('Accepted')
  }

  closeAll(): void {
    for (const session of [...this.sessions.values()]) session.end()
  }
}
