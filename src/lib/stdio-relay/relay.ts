import type {Readable} from 'node:stream'
import type {JSONRPCMessage} from '@modelcontextprotocol/sdk/types.js'
import {readLines} from '../bridge/line-reader.ts'
import type {Logger} from '../log/logger.ts'
import {INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, toJsonRpcMessage} from '../mcp/json-rpc.ts'
import type {UpstreamSession} from './upstream-session.ts'

/**
 * The stdio side of `proxy stdio`: newline-delimited JSON-RPC from the client's stdin to the
 * upstream session, the server's messages back as lines on stdout — and nothing else on stdout,
 * ever. Lines that are not JSON-RPC are answered with a JSON-RPC error (id null) and the relay stays
 * up. Client messages wait until `ready` (a remote login) resolves, then go out in order.
 */

export const MAX_LINE_BYTES = 16 * 1024 * 1024

export interface RelayOptions {
  input: Readable
  /** Writes one line to stdout. */
  write: (line: string) => void
  upstream: UpstreamSession
  logger: Logger
  ready: Promise<void>
  /** How long shutdown waits for answers still in flight. */
  drainMs?: number
}

export class StdioRelay {
  private readonly pending = new Set<string>()
  private readonly options: RelayOptions
  private readonly ended: Promise<void>
  private chain: Promise<void>

  constructor(options: RelayOptions) {
    this.options = options
    this.chain = options.ready
    this.ended = new Promise((resolve) => {
      options.input.once('end', resolve)
      options.input.once('close', resolve)
    })
    readLines(options.input, (line) => this.fromClient(line), {
      maxLineBytes: MAX_LINE_BYTES,
      onOversize: (bytes) =>
        this.refuse(
          PARSE_ERROR,
          `Parse error: a line of ${bytes} bytes exceeds the ${MAX_LINE_BYTES}-byte limit`,
        ),
    })
  }

  /** Resolves when stdin ends. */
  get inputEnded(): Promise<void> {
    return this.ended
  }

  /** A message from the server. */
  toClient(message: JSONRPCMessage): void {
    const m = message as {id?: unknown; method?: unknown}
    if (m.method === undefined && m.id !== undefined) this.pending.delete(key(m.id))
    this.options.write(JSON.stringify(message))
  }

  /** Waits for answers in flight (bounded), then answers the rest with an error. */
  async drain(): Promise<void> {
    const deadline = Date.now() + (this.options.drainMs ?? 5_000)
    while (this.pending.size > 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50))
    for (const id of this.pending) {
      this.options.write(
        JSON.stringify({
          jsonrpc: '2.0',
          id: JSON.parse(id),
          error: {code: INTERNAL_ERROR, message: 'toolgate proxy stdio is shutting down'},
        }),
      )
    }
    this.pending.clear()
  }

  private fromClient(line: string): void {
    let value: unknown
    try {
      value = JSON.parse(line)
    } catch {
      return this.refuse(PARSE_ERROR, 'Parse error: the line is not JSON')
    }
    const batch = Array.isArray(value) ? value : [value]
    if (batch.length === 0) return this.refuse(INVALID_REQUEST, 'Invalid Request: empty batch')
    for (const item of batch) {
      const parsed = toJsonRpcMessage(item)
      if (!parsed.ok) {
        this.refuse(INVALID_REQUEST, `Invalid Request: ${parsed.detail}`)
        continue
      }
      const message = item as JSONRPCMessage
      const id = parsed.message.kind === 'request' ? parsed.message.id : undefined
      if (id !== undefined) this.pending.add(key(id))
      // The handshake goes first and in order (initialize, then notifications/initialized);
      // everything after it is sent at once, so many calls can be in flight together.
      const sent = this.chain.then(() => this.options.upstream.send(message))
      const method = parsed.message.kind === 'response' ? '' : parsed.message.method
      if (method === 'initialize' || method === 'notifications/initialized')
        this.chain = sent.catch(() => undefined)
      sent.catch((err: Error) => {
        this.options.logger.warn('could not forward a message', {error: err.message})
        if (id !== undefined && this.pending.delete(key(id))) {
          this.options.write(
            JSON.stringify({
              jsonrpc: '2.0',
              id,
              error: {code: INTERNAL_ERROR, message: `upstream: ${err.message}`},
            }),
          )
        }
      })
    }
  }

  private refuse(code: number, message: string): void {
    this.options.write(JSON.stringify({jsonrpc: '2.0', id: null, error: {code, message}}))
  }
}

function key(id: unknown): string {
  return JSON.stringify(id)
}
