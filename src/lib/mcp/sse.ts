/**
 * Server-sent events (WHATWG HTML "Server-sent events" §9.2.6, the event stream format) as MCP's
 * streamable HTTP transport uses them: parse a byte stream into events, let a caller replace an
 * event, and re-serialise. Events nobody replaces are passed through byte for byte.
 */

export interface SseEvent {
  /** Values of `data:` lines joined with "\n" (undefined when the event had no data line). */
  data: string | undefined
  event: string | undefined
  id: string | undefined
  retry: string | undefined
}

/** Reads the fields of one event from its lines (comments and unknown fields ignored, as clients do). */
export function parseSseFields(lines: readonly string[]): SseEvent {
  const out: SseEvent = {data: undefined, event: undefined, id: undefined, retry: undefined}
  const data: string[] = []
  for (const line of lines) {
    if (line.startsWith(':')) continue
    const colon = line.indexOf(':')
    const name = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? '' : line.slice(colon + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    if (name === 'data') data.push(value)
    else if (name === 'event') out.event = value
    else if (name === 'id') out.id = value
    else if (name === 'retry') out.retry = value
  }
  if (data.length > 0) out.data = data.join('\n')
  return out
}

/** Serialises an event; multi-line data becomes several `data:` lines (a line break ends a field). */
export function serializeSseEvent(ev: SseEvent): string {
  let out = ''
  if (ev.event !== undefined) out += `event: ${stripBreaks(ev.event)}\n`
  if (ev.id !== undefined) out += `id: ${stripBreaks(ev.id)}\n`
  if (ev.retry !== undefined) out += `retry: ${stripBreaks(ev.retry)}\n`
  if (ev.data !== undefined)
    for (const line of ev.data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`
  return out + '\n'
}

function stripBreaks(s: string): string {
  return s.replace(/[\r\n]/g, '')
}

/**
 * Returns a replacement for an event, or undefined to pass the original bytes through. It may
 * throw; the transform then errors and the client sees the stream fail rather than an unchecked event.
 */
export type SseEventMapper = (event: SseEvent) => string | undefined

/**
 * Incremental splitter: feed text, get complete events (raw text + lines). Handles CRLF, LF and CR
 * line ends, including a CRLF split across chunks.
 */
export class SseSplitter {
  #buffer = ''
  #raw = ''
  #lines: string[] = []

  /** `final`: no more input follows, so a trailing CR is a complete line end. */
  push(text: string, onEvent: (raw: string, lines: string[]) => void, final = false): void {
    this.#buffer += text
    let pos = 0
    const buf = this.#buffer
    while (pos < buf.length) {
      const lf = buf.indexOf('\n', pos)
      const cr = buf.indexOf('\r', pos)
      let end: number
      let termLen: number
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        // A CR as the last character may be the first half of a CRLF: wait for more input.
        if (cr === buf.length - 1 && !final) break
        end = cr
        termLen = buf[cr + 1] === '\n' ? 2 : 1
      } else if (lf !== -1) {
        end = lf
        termLen = 1
      } else break
      const line = buf.slice(pos, end)
      this.#raw += buf.slice(pos, end + termLen)
      pos = end + termLen
      if (line === '') {
        const raw = this.#raw
        const lines = this.#lines
        this.#raw = ''
        this.#lines = []
        onEvent(raw, lines)
      } else this.#lines.push(line)
    }
    this.#buffer = buf.slice(pos)
  }

  /** What is left at end of stream: an incomplete event, which clients never dispatch (§9.2.6). */
  get pending(): string {
    return this.#raw + this.#buffer
  }

  /** The lines of that incomplete event, including an unterminated last line. */
  get pendingLines(): string[] {
    return this.#buffer === '' ? [...this.#lines] : [...this.#lines, this.#buffer]
  }
}

export interface SseTransformOptions {
  /**
   * The body is not UTF-8 (event streams are UTF-8 only, §9.2.6; a compressed body is the usual
   * cause). Return text to send in place of the rest of the body, which is then discarded, or
   * undefined to fail the stream. Without this option the stream fails.
   */
  onUndecodable?: () => string | undefined
}

export class SseDecodeError extends Error {}

/**
 * A byte transform over an SSE body that applies `mapper` to each complete event. Bytes that are
 * not UTF-8 are never passed on: decoding is strict, and `options.onUndecodable` decides what the
 * client gets instead.
 */
export function createSseTransform(
  mapper: SseEventMapper,
  options: SseTransformOptions = {},
): TransformStream<Uint8Array, Uint8Array> {
  const decoder = new TextDecoder('utf-8', {fatal: true})
  const encoder = new TextEncoder()
  const splitter = new SseSplitter()
  let refused = false
  const run = (
    text: string,
    controller: TransformStreamDefaultController<Uint8Array>,
    final = false,
  ) => {
    let out = ''
    splitter.push(
      text,
      (raw, lines) => {
        if (lines.length === 0) {
          out += raw
          return
        }
        const replacement = mapper(parseSseFields(lines))
        out += replacement ?? raw
      },
      final,
    )
    if (final && parseSseFields(splitter.pendingLines).data === undefined) {
      // An unterminated tail without a data line dispatches nothing, so it is harmless to pass
      // (a non-SSE error body such as `{"error":…}` keeps its text).
      out += splitter.pending
    }
    if (out !== '') controller.enqueue(encoder.encode(out))
  }
  const decode = (
    controller: TransformStreamDefaultController<Uint8Array>,
    chunk?: Uint8Array,
  ): string | undefined => {
    try {
      return chunk ? decoder.decode(chunk, {stream: true}) : decoder.decode()
    } catch {
      refused = true
      const replacement = options.onUndecodable?.()
      if (replacement === undefined)
        controller.error(new SseDecodeError('event stream is not UTF-8'))
      else if (replacement !== '') controller.enqueue(encoder.encode(replacement))
      return undefined
    }
  }
  return new TransformStream({
    transform(chunk, controller) {
      if (refused) return
      const text = decode(controller, chunk)
      if (text !== undefined) run(text, controller)
    },
    flush(controller) {
      if (refused) return
      const text = decode(controller)
      // An unterminated trailing event with data is dropped: clients would not dispatch it
      // either, and it must not reach them unchecked.
      if (text !== undefined) run(text, controller, true)
    },
  })
}
