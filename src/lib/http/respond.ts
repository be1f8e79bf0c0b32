import type {IncomingMessage, ServerResponse} from 'node:http'
import {ToolgateError, toToolgateError} from '../errors.ts'

/** Sends a JSON body with the headers every response carries (contract §1: nosniff). */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const payload = typeof body === 'string' ? body : JSON.stringify(body)
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
    'x-content-type-options': 'nosniff',
    ...headers,
  })
  res.end(payload)
}

/** Error body `{"error": …}`; unexpected faults become 500 `internal server error`. */
export function sendError(res: ServerResponse, err: unknown): void {
  const e = toToolgateError(err)
  const message = e.code === 'ERR_INTERNAL' ? 'internal server error' : e.message
  sendJson(res, e.status, {error: message})
}

/**
 * Reads a request body up to `limit` bytes. Past the limit it stops reading and throws
 * ERR_BODY_TOO_LARGE, so an oversized body is never buffered whole.
 */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'])
  if (Number.isFinite(declared) && declared > limit) {
    throw new ToolgateError('ERR_BODY_TOO_LARGE', `request body exceeds ${limit} bytes`)
  }
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > limit) throw new ToolgateError('ERR_BODY_TOO_LARGE', `request body exceeds ${limit} bytes`)
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks)
}
