import type {ServerResponse} from 'node:http'
import type {Message} from './multiplexer.ts'

/**
 * An open server-sent-events answer (MCP streamable HTTP and the legacy SSE transport): one
 * `event: message` per JSON-RPC message, a comment every `keepAliveMs` so idle intermediaries and
 * dead clients are noticed, and a bound on what a slow reader may leave unread — past it the
 * stream is cut rather than buffered without limit.
 */
export const MAX_UNREAD_BYTES = 16 * 1024 * 1024
const KEEPALIVE_MS = 25_000

export class SseWriter {
  private readonly ping: NodeJS.Timeout
  closed = false

  private readonly res: ServerResponse

  constructor(res: ServerResponse, headers: Record<string, string> = {}) {
    this.res = res

    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      ...headers,
    })
    res.flushHeaders()
    this.ping = setInterval(() => this.write(': keep-alive\n\n'), KEEPALIVE_MS)
    this.ping.unref()
    res.on('close', () => {
      this.closed = true
      clearInterval(this.ping)
    })
  }

  send(message: Message, event = 'message'): void {
    this.write(`event: ${event}\ndata: ${JSON.stringify(message)}\n\n`)
  }

  /** A raw `data:` line (the legacy transport's `endpoint` event carries a URL, not JSON). */
  sendRaw(event: string, data: string): void {
    this.write(`event: ${event}\ndata: ${data}\n\n`)
  }

  end(): void {
    clearInterval(this.ping)
    if (!this.closed) this.res.end()
    this.closed = true
  }

  private write(text: string): void {
    if (this.closed) return
    if (this.res.writableLength > MAX_UNREAD_BYTES) {
      this.closed = true
      this.res.destroy()
      return
    }
    this.res.write(text)
  }
}
