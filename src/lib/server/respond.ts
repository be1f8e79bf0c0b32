import type {ServerResponse} from 'node:http'

/**
 * The one way the serve handlers write a response: JSON text with the headers every response
 * carries (contract §1: `X-Content-Type-Options: nosniff`). Header arrays keep the hot path cheap;
 * a Buffer body (already UTF-8) is written as is, with no encoding pass on the hot path.
 */
export function sendText(
  res: ServerResponse,
  status: number,
  body: string | Buffer,
  contentType = 'application/json',
  extra?: Record<string, string>,
): void {
  // A flat [name, value, …] array: writeHead's cheapest form (no header object to walk).
  const headers = [
    'content-type',
    contentType,
    'content-length',
    String(typeof body === 'string' ? Buffer.byteLength(body) : body.length),
    'x-content-type-options',
    'nosniff',
  ]
  if (extra) for (const k in extra) headers.push(k, extra[k] as string)
  res.writeHead(status, headers)
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
