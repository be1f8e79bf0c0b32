/**
 * Rewrites the upstream's answer to a list request, in a JSON body or in an SSE stream (MCP
 * streamable HTTP lets the server answer a POST either way).
 */
import {INTERNAL_ERROR, isRecord, jsonRpcError, type JsonRpcId} from '../mcp/json-rpc.ts'
import {createSseTransform, serializeSseEvent, type SseEvent} from '../mcp/sse.ts'
import {MalformedListError} from './list-filter.ts'
import type {ListKind} from './method-table.ts'

/** Filters one list result (may throw MalformedListError). */
export type ResultFilter = (kind: ListKind, result: unknown) => Record<string, unknown>

const MAX_JSON_BODY = 64 * 1024 * 1024
export const MALFORMED_LIST_MESSAGE = 'Invalid list response from the MCP server'

/**
 * The text that replaces a JSON-RPC message that answers our list request, or undefined when the
 * message is not that answer (other messages of an SSE stream pass untouched).
 */
export function rewriteListMessage(message: unknown, id: JsonRpcId, kind: ListKind, filter: ResultFilter): string | undefined {
  if (!isRecord(message) || message.id !== id || !('result' in message || 'error' in message)) return undefined
  if ('error' in message && !('result' in message)) return undefined // an error reveals no items
  try {
    return JSON.stringify({...message, result: filter(kind, message.result)})
  } catch (err) {
    if (err instanceof MalformedListError) return jsonRpcError(id, INTERNAL_ERROR, MALFORMED_LIST_MESSAGE)
    throw err
  }
}

function parseJson(text: string | undefined): unknown {
  if (text === undefined) return undefined
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** SSE: replace the event that answers `id`, keep its `id:`/`event:` fields (resumability). */
export function listSseMapper(id: JsonRpcId, kind: ListKind, filter: ResultFilter): (ev: SseEvent) => string | undefined {
  return (ev) => {
    const replaced = rewriteListMessage(parseJson(ev.data), id, kind, filter)
    return replaced === undefined ? undefined : serializeSseEvent({...ev, data: replaced})
  }
}

/** A whole-body transform: collects the body (bounded), then emits `map(text)`. */
export function wholeBodyTransform(map: (text: string) => string): TransformStream<Uint8Array, Uint8Array> {
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
      const text = tooLarge ? '\u0000' : Buffer.concat(chunks).toString('utf8')
      controller.enqueue(new TextEncoder().encode(map(text)))
    },
  })
}

/**
 * The response transform for a list request with this `id`. JSON bodies must be the answer
 * itself (anything else → JSON-RPC error, fail closed); SSE events are mapped one by one; other
 * content types pass unless the body is JSON, which is then treated as a JSON answer.
 */
export function listResponseTransform(
  contentType: string | undefined,
  id: JsonRpcId,
  kind: ListKind,
  filter: ResultFilter,
): TransformStream<Uint8Array, Uint8Array> {
  const type = (contentType ?? '').toLowerCase()
  if (type.includes('text/event-stream')) return createSseTransform(listSseMapper(id, kind, filter))
  const strict = type.includes('json')
  return wholeBodyTransform((text) => {
    const value = parseJson(text)
    if (value === undefined && !strict) return text
    if (isRecord(value) && value.id === id && 'error' in value && !('result' in value)) return text
    return rewriteListMessage(value, id, kind, filter) ?? jsonRpcError(id, INTERNAL_ERROR, MALFORMED_LIST_MESSAGE)
  })
}

/**
 * Standalone SSE streams (GET) and legacy SSE transports carry responses too; there the answer
 * cannot be matched to a request, so any response whose result holds a `tools`, `prompts` or
 * `resources` array is filtered as that list (filtering only ever removes items).
 */
export function streamSseMapper(filter: ResultFilter): (ev: SseEvent) => string | undefined {
  return (ev) => {
    const message = parseJson(ev.data)
    if (!isRecord(message) || !isRecord(message.result) || !('id' in message)) return undefined
    let result: Record<string, unknown> = message.result
    let changed = false
    for (const kind of ['tools', 'prompts', 'resources'] as const) {
      if (!Array.isArray(result[kind])) continue
      try {
        result = filter(kind, result)
        changed = true
      } catch (err) {
        if (!(err instanceof MalformedListError)) throw err
        const id = typeof message.id === 'string' || typeof message.id === 'number' ? message.id : null
        return serializeSseEvent({...ev, data: jsonRpcError(id, INTERNAL_ERROR, MALFORMED_LIST_MESSAGE)})
      }
    }
    return changed ? serializeSseEvent({...ev, data: JSON.stringify({...message, result})}) : undefined
  }
}
