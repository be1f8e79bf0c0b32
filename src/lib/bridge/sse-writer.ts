import type {ServerResponse} from 'node:http'
import type {BufferBudget, Buffered} from './buffer-budget.ts'
import type {Message} from './multiplexer.ts'

/**
 * An open server-sent-events answer (MCP streamable HTTP and the legacy SSE transport): one
 * `event: message` per JSON-RPC message, a comment every `keepAliveMs` so idle intermediaries and
 * dead clients are noticed, and a bound on what a slow reader may leave unread — past it the
 * stream is cut rather than buffered without limit. With a budget, what every stream leaves
 * unread is bounded as a whole too (buffer-budget.ts).
 */
export const MAX_UNREAD_BYTES = 16 * 1024 * 1024
const KEEPALIVE_MS = 25_000

/**
 * A message's event bytes, made once however many streams it goes to: a broadcast (a log message,
 * list_changed) to many sessions is one buffer that every stream's write queue shares, not one
 * copy per stream.
 */
const eventBytes = new WeakMap<Message, Buffer>()

function messageEvent(message: Message): Buffer {
  let bytes = eventBytes.get(message)
  if (!bytes) {
    bytes = Buffer.from(`event: message\ndata: ${JSON.stringify(message)}\n\n`)
    eventBytes.set(message, bytes)
  }
  return bytes
}

export class SseWriter implements Buffered {
  private readonly ping: NodeJS.Timeout
  closed = false

  private readonly res: ServerResponse
  private readonly budget: BufferBudget | undefined

  constructor(res: ServerResponse, headers: Record<string, string> = {}, budget?: BufferBudget) {
    this.res = res
    this.budget = budget

    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      ...headers,
    })
    res.flushHeaders()
    this.ping = setInterval(() => this.write(': keep-alive\n\n'), KEEPALIVE_MS)
    this.ping.unref()
    res.on('drain', () => this.budget?.release(this))
    res.on('close', () => {
      this.closed = true
      clearInterval(this.ping)
      this.budget?.release(this)
    })
  }

  get unread(): number {
    return this.closed ? 0 : this.res.writableLength
  }

  send(message: Message): void {
    this.write(messageEvent(message))
  }

  /** A raw `data:` line (the legacy transport's `endpoint` event carries a URL, not JSON). */
  sendRaw(event: string, data: string): void {
    this.write(`event: ${event}\ndata: ${data}\n\n`)
  }

  end(): void {
    clearInterval(this.ping)
    if (!this.closed) this.res.end()
    this.closed = true
    this.budget?.release(this)
  }

  cut(): void {
    this.closed = true
    clearInterval(this.ping)
    this.res.destroy()
  }

  private write(text: string | Buffer): void {
    if (this.closed) return
    if (this.res.writableLength > MAX_UNREAD_BYTES) {
      this.budget?.release(this)
      return this.cut()
    }
    this.res.write(text)
    this.budget?.charge(this)
  }
}
