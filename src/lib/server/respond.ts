import type {ServerResponse} from 'node:http'

/**
 * The one way the serve handlers write a response: JSON text with the headers every response
 * carries (contract §1: `X-Content-Type-Options: nosniff`). Header arrays keep the hot path cheap.
 */
export function sendText(
  res: ServerResponse,
  status: number,
  body: string,
  contentType = 'application/json',
  extra?: Record<string, string>,
): void {
  res.statusCode = status
  res.setHeader('content-type', contentType)
  res.setHeader('content-length', Buffer.byteLength(body))
  res.setHeader('x-content-type-options', 'nosniff')
  if (extra) for (const k in extra) res.setHeader(k, extra[k] as string)
  res.end(body)
}

export function sendErrorBody(
  res: ServerResponse,
  status: number,
  message: string,
  extra?: Record<string, string>,
): void {
  sendText(res, status, JSON.stringify({error: message}), 'application/json', extra)
}

/** 405 with `Allow`, as RFC 9110 §15.5.6 requires. */
export function sendMethodNotAllowed(res: ServerResponse): void {
  sendErrorBody(res, 405, 'method not allowed', {allow: 'GET, HEAD'})
}

export function isReadMethod(method: string | undefined): boolean {
  return method === 'GET' || method === 'HEAD'
}
