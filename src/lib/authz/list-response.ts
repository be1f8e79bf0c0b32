/**
 * Rewrites the upstream's answer to a list request, in a JSON body or in an SSE stream (MCP
 * streamable HTTP lets the server answer a POST either way), and the list-shaped responses of a
 * standalone SSE stream. Everything here fails closed: a body that cannot be read as UTF-8 JSON or
 * SSE (compressed, unknown content type, malformed list) is replaced by a JSON-RPC error, never
 * passed on unfiltered.
 */
import {INTERNAL_ERROR, isRecord, jsonRpcError, type JsonRpcId} from '../mcp/json-rpc.ts'
import {createSseTransform, serializeSseEvent, type SseEvent} from '../mcp/sse.ts'
import {MalformedListError} from './list-filter.ts'
import type {ListKind} from './method-table.ts'

/** Filters one list result (may throw MalformedListError). */
export type ResultFilter = (kind: ListKind, result: unknown) => Record<string, unknown>

/** The upstream response's headers, when the proxy hands them over (names lower-case). */
export type ResponseHeaders = Readonly<Record<string, string | string[] | undefined>>

export interface ListResponseOptions {
  /** The response's headers; `content-encoding` other than identity fails closed. */
  headers?: ResponseHeaders | undefined
  /** Told why a response was refused (for the log; the client only sees the JSON-RPC error). */
  onRefused?: ((reason: string) => void) | undefined
}

const MAX_JSON_BODY = 64 * 1024 * 1024
export const MALFORMED_LIST_MESSAGE = 'Invalid list response from the MCP server'
const LIST_KINDS: readonly ListKind[] = ['tools', 'prompts', 'resources']

/** The media type without parameters, lower-cased (RFC 9110 §8.3.1: type/subtype are case-insensitive). */
export function mediaTypeEssence(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? ''
}

function isJsonType(essence: string): boolean {
  return essence === 'application/json' || essence.endsWith('+json')
}

/**
 * The content codings applied to the body (RFC 9110 §8.4), when any other than `identity`: the
 * transforms read text, so a coded body can be neither filtered nor checked.
 */
export function contentCoding(headers: ResponseHeaders | undefined): string | undefined {
  const raw = headers?.['content-encoding']
  const value = (Array.isArray(raw) ? raw.join(',') : (raw ?? '')).toLowerCase()
  const codings = value
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '' && c !== 'identity')
  return codings.length > 0 ? codings.join(', ') : undefined
}

function parseJson(text: string | undefined): unknown {
  if (text === undefined) return undefined
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

function idOf(message: unknown): JsonRpcId | null {
  return isRecord(message) && (typeof message.id === 'string' || typeof message.id === 'number')
    ? message.id
    : null
}

/**
 * Filters every list found in a response's result: `required` (the kind our list request asked
 * for) must be there; any other `tools`/`prompts`/`resources` key must be a well-formed list too
 * (filtering only ever removes items). Returns undefined when the message holds no list.
 * Throws MalformedListError.
 */
function filterLists(
  message: Record<string, unknown>,
  filter: ResultFilter,
  required?: ListKind,
): Record<string, unknown> | undefined {
  const result = message.result
  if (!isRecord(result)) {
    if (required) throw new MalformedListError('result is not an object')
    return undefined
  }
  let out: Record<string, unknown> = result
  let changed = false
  for (const kind of LIST_KINDS) {
    if (kind !== required && !Object.hasOwn(result, kind)) continue
    out = filter(kind, out)
    changed = true
  }
  return changed ? {...message, result: out} : undefined
}

/** The request whose answer is expected (POST), or none (standalone stream). */
interface Expected {
  id: JsonRpcId
  kind: ListKind
}

/**
 * The replacement for one JSON-RPC message, or undefined to keep it. The answer to `expected`
 * must hold that list (an error answer reveals no items and passes); any other message with a
 * `result` is filtered when list-shaped.
 */
function rewriteMessage(
  message: unknown,
  filter: ResultFilter,
  expected: Expected | undefined,
): Record<string, unknown> | undefined {
  if (!isRecord(message) || !('result' in message)) return undefined
  const answer = expected !== undefined && message.id === expected.id
  return filterLists(message, filter, answer ? expected.kind : undefined)
}

/**
 * One SSE event: its data may be one message or (older protocol revisions) a batch array; every
 * message in it is checked. A malformed list replaces the whole event with a JSON-RPC error.
 */
function sseEventMapper(
  filter: ResultFilter,
  expected: Expected | undefined,
  onRefused?: (reason: string) => void,
): (ev: SseEvent) => string | undefined {
  return (ev) => {
    const value = parseJson(ev.data)
    const batch = Array.isArray(value)
    const messages: unknown[] = batch ? value : [value]
    try {
      let changed = false
      const out = messages.map((m) => {
        const replaced = rewriteMessage(m, filter, expected)
        if (replaced === undefined) return m
        changed = true
        return replaced
      })
      return changed
        ? serializeSseEvent({...ev, data: JSON.stringify(batch ? out : out[0])})
        : undefined
    } catch (err) {
      if (!(err instanceof MalformedListError)) throw err
      onRefused?.(`malformed list: ${err.message}`)
      const id = !batch ? idOf(value) : (expected?.id ?? null)
      return serializeSseEvent({
        ...ev,
        data: jsonRpcError(id, INTERNAL_ERROR, MALFORMED_LIST_MESSAGE),
      })
    }
  }
}

/**
 * SSE on a POST answering a list request: the answer to `id` is filtered as that list, and every
 * other list-shaped response on the stream is filtered too; `id:`/`event:` fields are kept
 * (resumability).
 */
export function listSseMapper(
  id: JsonRpcId,
  kind: ListKind,
  filter: ResultFilter,
  onRefused?: (reason: string) => void,
): (ev: SseEvent) => string | undefined {
  return sseEventMapper(filter, {id, kind}, onRefused)
}

/**
 * Standalone SSE streams (GET) and legacy SSE transports carry responses too; there the answer
 * cannot be matched to a request, so any response whose result holds a `tools`, `prompts` or
 * `resources` key is filtered as that list (filtering only ever removes items).
 */
export function streamSseMapper(
  filter: ResultFilter,
  onRefused?: (reason: string) => void,
): (ev: SseEvent) => string | undefined {
  return sseEventMapper(filter, undefined, onRefused)
}

/** A whole-body transform: collects the body (bounded), then emits `map(text)` (undefined: not UTF-8 or too large). */
function wholeBodyTransform(
  map: (text: string | undefined) => string,
): TransformStream<Uint8Array, Uint8Array> {
  const chunks: Uint8Array[] = []
  let size = 0
  let tooLarge = false
  return new TransformStream({
    transform(chunk) {
      size += chunk.byteLength
      if (size > MAX_JSON_BODY) tooLarge = true
      else chunks.push(chunk)
    },
    flush(controller) {
      let text: string | undefined
      if (!tooLarge) {
        try {
          text = new TextDecoder('utf-8', {fatal: true}).decode(Buffer.concat(chunks))
        } catch {
          text = undefined // RFC 8259 §8.1: JSON is UTF-8; anything else (compressed bytes) is refused
        }
      }
      controller.enqueue(new TextEncoder().encode(map(text)))
    },
  })
}

/** Discards the body; emits `text` instead (once, at the end). */
function replaceBody(text: string): TransformStream<Uint8Array, Uint8Array> {
  return new TransformStream({
    transform() {
      // dropped: the default transform would pass the chunk on
    },
    flush(controller) {
      controller.enqueue(new TextEncoder().encode(text))
    },
  })
}

/** The error event that stands in for a list answer on an SSE stream. */
function sseError(id: JsonRpcId): string {
  return serializeSseEvent({
    event: 'message',
    id: undefined,
    retry: undefined,
    data: jsonRpcError(id, INTERNAL_ERROR, MALFORMED_LIST_MESSAGE),
  })
}

/**
 * The response transform for a list request with this `id`. JSON bodies must be the answer
 * itself; SSE events are mapped one by one. A coded body (`Content-Encoding` other than identity),
 * a body that is not UTF-8, or a content type that is neither JSON nor SSE is replaced by a
 * JSON-RPC error (an empty body, which reveals nothing, stays empty).
 */
export function listResponseTransform(
  contentType: string | undefined,
  id: JsonRpcId,
  kind: ListKind,
  filter: ResultFilter,
  options: ListResponseOptions = {},
): TransformStream<Uint8Array, Uint8Array> {
  const refuse = (reason: string) => options.onRefused?.(reason)
  const essence = mediaTypeEssence(contentType)
  const sse = essence === 'text/event-stream'
  const coding = contentCoding(options.headers)
  if (coding !== undefined) {
    refuse(`content-encoding ${coding}`)
    return replaceBody(
      sse ? sseError(id) : jsonRpcError(id, INTERNAL_ERROR, MALFORMED_LIST_MESSAGE),
    )
  }
  if (sse) {
    return createSseTransform(listSseMapper(id, kind, filter, refuse), {
      onUndecodable: () => {
        refuse('event stream is not UTF-8')
        return sseError(id)
      },
    })
  }
  const json = isJsonType(essence)
  return wholeBodyTransform((text) => {
    if (text === '' && !json) return '' // nothing to reveal
    if (text === undefined) {
      refuse('body is not UTF-8 or too large')
      return jsonRpcError(id, INTERNAL_ERROR, MALFORMED_LIST_MESSAGE)
    }
    if (!json) {
      refuse(`unexpected content type ${JSON.stringify(essence || '(none)')}`)
      return jsonRpcError(id, INTERNAL_ERROR, MALFORMED_LIST_MESSAGE)
    }
    const value = parseJson(text)
    if (!isRecord(value) || value.id !== id || !('result' in value || 'error' in value)) {
      refuse('not the JSON-RPC answer to the list request')
      return jsonRpcError(id, INTERNAL_ERROR, MALFORMED_LIST_MESSAGE)
    }
    if (!('result' in value)) return text // an error answer reveals no items
    try {
      return JSON.stringify(filterLists(value, filter, kind))
    } catch (err) {
      if (!(err instanceof MalformedListError)) throw err
      refuse(`malformed list: ${err.message}`)
      return jsonRpcError(id, INTERNAL_ERROR, MALFORMED_LIST_MESSAGE)
    }
  })
}

/**
 * The transform for a standalone stream (GET). MCP clients read a successful GET body as an event
 * stream whatever its content type, so every body is mapped as SSE; a coded or non-UTF-8 body
 * fails the stream (there is no request to answer with an error).
 */
export function streamResponseTransform(
  filter: ResultFilter,
  options: ListResponseOptions = {},
): TransformStream<Uint8Array, Uint8Array> {
  const coding = contentCoding(options.headers)
  if (coding !== undefined) {
    options.onRefused?.(`content-encoding ${coding}`)
    return new TransformStream({
      start(controller) {
        controller.error(new Error(`refused a ${coding}-coded event stream`))
      },
    })
  }
  return createSseTransform(streamSseMapper(filter, options.onRefused), {
    onUndecodable: () => {
      options.onRefused?.('event stream is not UTF-8')
      return undefined
    },
  })
}
