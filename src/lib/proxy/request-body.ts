import type {IncomingMessage, ServerResponse} from 'node:http'
import type {Readable} from 'node:stream'
import {isToolgateError} from '../errors.ts'
import {readBody} from '../http/respond.ts'
import {answer, answerTooLarge} from './answer.ts'
import {byteLimiter, readDeclaredBody} from './body-limit.ts'

/** Bodies up to this size are read before forwarding (see `takeRequestBody`). */
const SMALL_BODY = 64 * 1024

/** A body read before forwarding may pause this long between chunks (default). */
export const BODY_IDLE_MS = 15_000

/** Returned when the body was refused and the client already has its 413 or 408. */
export const REFUSED = Symbol('refused')

/**
 * The request body as the forwarder takes it: undefined (none), a Buffer (read whole) or a stream
 * bounded by the byte limiter. A body is read whole when something must see it (`mustSee`: an
 * interceptor needs the JSON-RPC message, a refreshing token source may replay it after a 401).
 * Small declared bodies (the usual JSON-RPC message) are read whole too: handing undici one buffer
 * lets it send head and body in one write, instead of a head write followed by a body write that
 * can stall on Nagle/delayed-ACK interplay at the target.
 */
export function takeRequestBody(
  req: IncomingMessage,
  res: ServerResponse,
  limit: number,
  mustSee: boolean,
  idleMs = BODY_IDLE_MS,
): Buffer | Readable | undefined | typeof REFUSED | Promise<Buffer | typeof REFUSED> {
  const declared = req.headers['content-length']
  const hasBody =
    declared !== undefined ? declared !== '0' : req.headers['transfer-encoding'] !== undefined
  if (!hasBody) return undefined
  const small = declared !== undefined && Number(declared) <= SMALL_BODY
  if (!mustSee && !small) return req.pipe(byteLimiter(limit))
  // A client that stops sending must not pin its buffer (and a connection) for ever: 408. The
  // socket's inactivity timer is used only while the body is read, then switched off again, so a
  // long response (SSE) is never cut by it.
  let stalled = false
  // On the request, not the socket: node then leaves the socket to this handler instead of
  // destroying it before the 408 is written.
  req.setTimeout(idleMs, () => {
    stalled = true
    res.setHeader('connection', 'close')
    res.once('finish', () => req.destroy())
    answer(res, 408, '{"error":"request body timeout"}')
  })
  return (small ? readDeclaredBody(req, limit) : readBody(req, limit))
    .catch((err: unknown): typeof REFUSED => {
      if (stalled) return REFUSED
      if (!isToolgateError(err, 'ERR_BODY_TOO_LARGE')) throw err
      answerTooLarge(res, err.message)
      return REFUSED
    })
    .finally(() => req.setTimeout(0))
}
