import type {IncomingMessage, ServerResponse} from 'node:http'
import {isToolgateError} from '../errors.ts'
import {readBody} from '../http/respond.ts'
import {INVALID_REQUEST, PARSE_ERROR, toJsonRpcMessage} from '../mcp/json-rpc.ts'
import {errorMessage, type Message} from './multiplexer.ts'

export interface BridgeLimits {
  maxBodyBytes: number
  maxSessions: number
}

export function answerJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) return void res.end()
  const text = JSON.stringify(body)
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  })
  res.end(text)
}

/**
 * Reads a POST body as one JSON-RPC message or a batch of them. On anything else the client is
 * answered here (413, 415, 400 with a JSON-RPC error) and undefined is returned.
 */
export async function parseMessages(
  req: IncomingMessage,
  res: ServerResponse,
  maxBodyBytes: number,
): Promise<{messages: Message[]; batch: boolean} | undefined> {
  const type = String(req.headers['content-type'] ?? '')
  if (!/^application\/json\b/i.test(type)) {
    answerJson(
      res,
      415,
      errorMessage(null, INVALID_REQUEST, 'Content-Type must be application/json'),
    )
    return undefined
  }
  let value: unknown
  try {
    value = JSON.parse((await readBody(req, maxBodyBytes)).toString('utf8'))
  } catch (err) {
    if (isToolgateError(err) && err.code === 'ERR_BODY_TOO_LARGE') {
      answerJson(res, 413, errorMessage(null, INVALID_REQUEST, err.message))
    } else answerJson(res, 400, errorMessage(null, PARSE_ERROR, 'Parse error'))
    return undefined
  }
  const batch = Array.isArray(value)
  const messages = (batch ? value : [value]) as unknown[]
  if (messages.length === 0) {
    answerJson(res, 400, errorMessage(null, INVALID_REQUEST, 'empty batch'))
    return undefined
  }
  for (const m of messages) {
    const outcome = toJsonRpcMessage(m)
    if (!outcome.ok) {
      answerJson(
        res,
        400,
        errorMessage(null, INVALID_REQUEST, `Invalid Request: ${outcome.detail}`),
      )
      return undefined
    }
  }
  return {messages: messages as Message[], batch}
}
