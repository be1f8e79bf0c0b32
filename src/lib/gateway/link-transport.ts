import type {Transport} from '@modelcontextprotocol/sdk/shared/transport.js'
import type {JSONRPCMessage} from '@modelcontextprotocol/sdk/types.js'
import {request, type Dispatcher} from 'undici'
import {isRecord} from '../mcp/json-rpc.ts'
import {parseSseFields, SseSplitter} from '../mcp/sse.ts'

/**
 * The client side of MCP streamable HTTP (spec 2025-06-18 "Transports") for the gateway's backend
 * links (issue 37), on undici's `request` and Node streams. Every message of every call passes
 * here twice (the call and its answer), so it avoids what the SDK's transport spends on each —
 * WHATWG fetch, web streams, and schema validation of messages the link only routes (the profile
 * in docs/gateway.md). What it does is the SDK's: POST each message (JSON or an SSE stream back),
 * keep the session id, open the standalone GET stream once initialized, DELETE to end.
 */

/** An HTTP status the server answered with (404: the session is gone). */
export class LinkHttpError extends Error {
  readonly status: number
  constructor(status: number, message: string) {
    super(message)
    this.status = status
  }
}

/** Longest message (or SSE event) accepted from a backend. */
const MAX_MESSAGE_CHARS = 16 * 1024 * 1024
const MAX_ERROR_BODY = 4_096

export class StreamableLinkTransport implements Transport {
  sessionId?: string
  onmessage?: (message: JSONRPCMessage) => void
  onerror?: (error: Error) => void
  onclose?: () => void
  readonly #url: URL
  readonly #dispatcher: Dispatcher
  #protocolVersion: string | undefined
  readonly #abort = new AbortController()
  /** The standalone stream is open: list_changed and the like can reach us. */
  streamOpen = false

  constructor(url: URL, dispatcher: Dispatcher) {
    this.#url = url
    this.#dispatcher = dispatcher
  }

  async start(): Promise<void> {}

  setProtocolVersion(version: string): void {
    this.#protocolVersion = version
  }

  async send(message: JSONRPCMessage): Promise<void> {
    await this.post(message)
  }

  /**
   * POSTs one message. `signal` ends this exchange alone (an answer came, the request timed out
   * or was cancelled): a stream the server holds open for it does not outlive it.
   */
  async post(message: JSONRPCMessage, signal?: AbortSignal): Promise<void> {
    // A request of the link's has its own signal, which the link aborts when it closes; the
    // transport's covers the rest (the standalone stream).
    const own = signal ?? this.#abort.signal
    const res = await request(this.#url, {
      dispatcher: this.#dispatcher,
      method: 'POST',
      headers: this.#headers({
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      }),
      body: JSON.stringify(message),
      signal: own,
    })
    const sid = res.headers['mcp-session-id']
    if (typeof sid === 'string' && sid !== '') this.sessionId = sid
    if (res.statusCode === 202) {
      res.body.resume()
      if ((message as {method?: string}).method === 'notifications/initialized') this.#openStream()
      return
    }
    if (res.statusCode < 200 || res.statusCode > 299) throw await httpError(res)
    const type = String(res.headers['content-type'] ?? '').toLowerCase()
    if (type.startsWith('text/event-stream')) {
      // The answer comes on the stream; send() is done once the server took the message.
      void this.#readEvents(res.body).catch((err: Error) => own.aborted || this.#error(err))
      return
    }
    if (!type.startsWith('application/json')) {
      res.body.resume()
      throw new Error(`unexpected content type "${type.slice(0, 60)}" from the server`)
    }
    const text = await readBounded(res.body)
    this.#deliver(text)
  }

  /** A message that is not a request (a notification, an answer): within `ms`, or while open. */
  async postBounded(message: JSONRPCMessage, ms: number): Promise<void> {
    await this.post(message, AbortSignal.any([this.#abort.signal, AbortSignal.timeout(ms)]))
  }

  /** Ends the session on the server (DELETE), bounded; failures are ignored (it may be gone). */
  async terminateSession(): Promise<void> {
    if (!this.sessionId) return
    const res = await request(this.#url, {
      dispatcher: this.#dispatcher,
      method: 'DELETE',
      headers: this.#headers({}),
      signal: AbortSignal.timeout(2_000),
    }).catch(() => undefined)
    res?.body.resume()
  }

  async close(): Promise<void> {
    this.#abort.abort()
    this.onclose?.()
  }

  #headers(extra: Record<string, string>): Record<string, string> {
    return {
      ...extra,
      ...(this.sessionId ? {'mcp-session-id': this.sessionId} : {}),
      ...(this.#protocolVersion ? {'mcp-protocol-version': this.#protocolVersion} : {}),
    }
  }

  /**
   * The standalone stream: what the server says outside a request (list_changed, sampling…). It
   * is opened again when it ends (a server may end an idle stream), after a pause that grows while
   * it keeps failing; each end is reported, so the link checks the session is still there.
   */
  #openStream(): void {
    void (async () => {
      let pause = 500
      while (!this.#abort.signal.aborted) {
        const opened = Date.now()
        try {
          const res = await request(this.#url, {
            dispatcher: this.#dispatcher,
            method: 'GET',
            headers: this.#headers({accept: 'text/event-stream'}),
            signal: this.#abort.signal,
          })
          // 405: the server offers no standalone stream (the spec allows it).
          if (res.statusCode === 405) return void res.body.resume()
          if (res.statusCode !== 200) throw await httpError(res)
          this.streamOpen = true
          await this.#readEvents(res.body)
          throw new Error('the server ended the standalone stream')
        } catch (err) {
          this.streamOpen = false
          this.#error(err as Error)
          if ((err as LinkHttpError).status === 404) return
        }
        if (Date.now() - opened > 30_000) pause = 500
        await new Promise((r) => setTimeout(r, pause).unref())
        pause = Math.min(pause * 2, 30_000)
      }
    })()
  }

  async #readEvents(
    body: NodeJS.ReadableStream & {setEncoding(e: string): unknown},
  ): Promise<void> {
    body.setEncoding('utf8')
    const splitter = new SseSplitter()
    for await (const chunk of body as AsyncIterable<string>) {
      splitter.push(chunk, (_raw, lines) => {
        const event = parseSseFields(lines)
        if (event.data !== undefined && (event.event === undefined || event.event === 'message'))
          this.#deliver(event.data)
      })
      if (splitter.pending.length > MAX_MESSAGE_CHARS)
        throw new Error('an event from the server is too large')
    }
  }

  #deliver(text: string): void {
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      return this.#error(new Error('the server sent a message that is not JSON'))
    }
    for (const m of Array.isArray(value) ? value : [value])
      if (isRecord(m) && m.jsonrpc === '2.0') this.onmessage?.(m as JSONRPCMessage)
  }

  #error(err: Error): void {
    if (this.#abort.signal.aborted) return
    this.onerror?.(err)
  }
}

async function readBounded(body: AsyncIterable<Buffer | string>): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
    size += b.length
    if (size > MAX_MESSAGE_CHARS) throw new Error('the answer from the server is too large')
    chunks.push(b)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** The status, and the start of the body for our log: read up to a bound, the rest discarded. */
async function httpError(res: Dispatcher.ResponseData): Promise<LinkHttpError> {
  let text = ''
  for await (const chunk of res.body) {
    text += String(chunk)
    if (text.length >= MAX_ERROR_BODY) {
      res.body.destroy()
      break
    }
  }
  return new LinkHttpError(res.statusCode, `HTTP ${res.statusCode}: ${text.slice(0, 200)}`)
}
