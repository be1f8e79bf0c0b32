import type {IncomingMessage, ServerResponse} from 'node:http'
import type {Readable} from 'node:stream'
import {isToolgateError} from '../errors.ts'
import {readBody} from '../http/respond.ts'
import {answerTooLarge} from './answer.ts'
import {byteLimiter, readDeclaredBody} from './body-limit.ts'

/** Bodies up to this size are read before forwarding (see `takeRequestBody`). */
const SMALL_BODY = 64 * 1024

/** Returned when the body was refused and the client already has its 413. */
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
): Buffer | Readable | undefined | typeof REFUSED | Promise<Buffer | typeof REFUSED> {
  const declared = req.headers['content-length']
  const hasBody =
    declared !== undefined ? declared !== '0' : req.headers['transfer-encoding'] !== undefined
  if (!hasBody) return undefined
  const small = declared !== undefined && Number(declared) <= SMALL_BODY
  if (!mustSee && !small) return req.pipe(byteLimiter(limit))
  return (small ? readDeclaredBody(req, limit) : readBody(req, limit)).catch((err: unknown) => {
    if (!isToolgateError(err, 'ERR_BODY_TOO_LARGE')) throw err
    answerTooLarge(res, err.message)
    return REFUSED
  })
}
