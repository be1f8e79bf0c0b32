import {Readable} from 'node:stream'
import type {FetchLike} from '@modelcontextprotocol/sdk/shared/transport.js'
import {request, type Dispatcher} from 'undici'

/**
 * A `fetch` for the MCP SDK's client transports built on undici's `request` (issue 37): the same
 * Response to the SDK, without WHATWG fetch's machinery on every message — its Request objects,
 * abort listeners, and a request body streamed in chunks (one write each) where `request` writes a
 * small JSON body with its head. Redirects are never followed here (the SDK decides, within the
 * origin); the dispatcher's timeouts bound every call.
 */
export function requestFetch(dispatcher: Dispatcher): FetchLike {
  return (async (url: string | URL, init: RequestInit = {}) => {
    const headers: Record<string, string> = {}
    new Headers(init.headers).forEach((value, name) => (headers[name] = value))
    const body = init.body
    if (body !== undefined && body !== null && typeof body !== 'string')
      throw new TypeError('requestFetch: only string bodies are sent')
    const answer = await request(url, {
      dispatcher,
      method: (init.method ?? 'GET') as Dispatcher.HttpMethod,
      headers,
      ...(typeof body === 'string' ? {body} : {}),
      ...(init.signal ? {signal: init.signal} : {}),
    })
    const responseHeaders = new Headers()
    for (const [name, value] of Object.entries(answer.headers)) {
      if (Array.isArray(value)) for (const v of value) responseHeaders.append(name, v)
      else if (value !== undefined) responseHeaders.set(name, value)
    }
    const empty = answer.statusCode === 204 || answer.statusCode === 304 || init.method === 'HEAD'
    if (empty) answer.body.resume()
    return new Response(empty ? null : (Readable.toWeb(answer.body) as ReadableStream), {
      status: answer.statusCode,
      headers: responseHeaders,
    })
  }) as FetchLike
}
