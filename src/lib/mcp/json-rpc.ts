/**
 * JSON-RPC 2.0 message parsing for MCP traffic (JSON-RPC 2.0 §4, §5; MCP "Base Protocol").
 * Pure functions over bytes/values, so the proxy, `run` and the authorizer share one reading of a
 * message and tests need no network.
 */

export type JsonRpcId = string | number

export interface JsonRpcRequest {
  kind: 'request'
  id: JsonRpcId
  method: string
  params: Record<string, unknown> | unknown[] | undefined
}

export interface JsonRpcNotification {
  kind: 'notification'
  method: string
  params: Record<string, unknown> | unknown[] | undefined
}

/** A message without a method: the client answering a server-initiated request (sampling, …). */
export interface JsonRpcResponse {
  kind: 'response'
  id: JsonRpcId | null
  result?: unknown
  error?: unknown
}

export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse

export type ParseOutcome =
  | {ok: true; message: JsonRpcMessage}
  | {ok: false; reason: 'not_json' | 'batch' | 'invalid'; detail: string}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function isId(value: unknown): value is JsonRpcId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))
}

/** Classifies one already-parsed JSON value as a JSON-RPC 2.0 message. */
export function toJsonRpcMessage(value: unknown): ParseOutcome {
  if (Array.isArray(value))
    return {ok: false, reason: 'batch', detail: 'JSON-RPC batches are not supported'}
  if (!isRecord(value))
    return {ok: false, reason: 'invalid', detail: 'a JSON-RPC message must be an object'}
  if (value.jsonrpc !== '2.0')
    return {ok: false, reason: 'invalid', detail: 'jsonrpc must be "2.0"'}
  const params = value.params
  if (params !== undefined && typeof params !== 'object') {
    return {ok: false, reason: 'invalid', detail: 'params must be an object or an array'}
  }
  if (params === null)
    return {ok: false, reason: 'invalid', detail: 'params must be an object or an array'}
  const p = params as Record<string, unknown> | unknown[] | undefined
  if ('method' in value) {
    if (typeof value.method !== 'string' || value.method === '') {
      return {ok: false, reason: 'invalid', detail: 'method must be a non-empty string'}
    }
    if (!('id' in value))
      return {ok: true, message: {kind: 'notification', method: value.method, params: p}}
    if (!isId(value.id))
      return {ok: false, reason: 'invalid', detail: 'id must be a string or a number'}
    return {ok: true, message: {kind: 'request', id: value.id, method: value.method, params: p}}
  }
  if ('result' in value || 'error' in value) {
    if (value.id !== null && !isId(value.id)) {
      return {ok: false, reason: 'invalid', detail: 'id must be a string, a number or null'}
    }
    return {
      ok: true,
      message: {kind: 'response', id: value.id, result: value.result, error: value.error},
    }
  }
  return {ok: false, reason: 'invalid', detail: 'neither a request, a notification nor a response'}
}

/** Parses a request body (UTF-8 JSON text) into one JSON-RPC message. */
export function parseJsonRpcBody(body: Uint8Array | string): ParseOutcome {
  const text =
    typeof body === 'string'
      ? body
      : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8')
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return {ok: false, reason: 'not_json', detail: 'the request body is not JSON'}
  }
  return toJsonRpcMessage(value)
}

/** Builds a JSON-RPC error response; `id` is left out when the request had none (contract §6). */
export function jsonRpcError(
  id: JsonRpcId | null | undefined,
  code: number,
  message: string,
): string {
  const body: Record<string, unknown> = {jsonrpc: '2.0'}
  if (id !== undefined) body.id = id
  body.error = {code, message}
  return JSON.stringify(body)
}

// JSON-RPC 2.0 §5.1 error codes.
export const PARSE_ERROR = -32700
export const INVALID_REQUEST = -32600
export const INTERNAL_ERROR = -32603
