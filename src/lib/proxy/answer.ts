import type {ServerResponse} from 'node:http'

const JSON_HEADERS = {'content-type': 'application/json', 'x-content-type-options': 'nosniff'}

/** Bodies of the proxy's own answers (contract §3). */
export const TOKEN_EXCHANGE_FAILED = '{"error":"Token exchange failed"}'
export const CREDENTIALS_UNAVAILABLE = '{"error":"upstream credentials unavailable"}'
/** Sent with CREDENTIALS_UNAVAILABLE: a login or refresh may be under way (contract §3, 503 + Retry-After). */
export const RETRY_LATER = {'retry-after': '5'}

/**
 * A JSON answer produced by the proxy itself. Once the upstream's head has gone out there is no way
 * to answer any more: the connection is cut so the client sees a failure, not a spliced body.
 */
export function answer(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.destroy()
    return
  }
  res.writeHead(status, {
    ...JSON_HEADERS,
    'content-length': String(Buffer.byteLength(body)),
    ...headers,
  })
  res.end(body)
}

/** 413, closing the connection: the rest of an oversized body is not read (contract §3). */
export function answerTooLarge(res: ServerResponse, message: string): void {
  res.setHeader('connection', 'close')
  answer(res, 413, JSON.stringify({error: message}))
}
