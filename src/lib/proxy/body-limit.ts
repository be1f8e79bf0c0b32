import {Transform, type TransformCallback} from 'node:stream'
import {ToolgateError} from '../errors.ts'

/** Contract §3 / spec "Limits": 0 selects the default of 8 MiB. */
export const DEFAULT_MAX_BODY = 8 * 1024 * 1024

export function effectiveBodyLimit(configured: number | undefined): number {
  return !configured ? DEFAULT_MAX_BODY : configured
}

export function bodyTooLarge(limit: number): ToolgateError {
  return new ToolgateError('ERR_BODY_TOO_LARGE', `request body exceeds ${limit} bytes`)
}

/**
 * Counts bytes as they stream through and fails past `limit`, so a chunked body is never buffered
 * to be measured; the failure aborts the upstream request that is reading from it.
 */
export function byteLimiter(limit: number): Transform {
  let seen = 0
  return new Transform({
    transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback) {
      seen += chunk.length
      if (seen > limit) cb(bodyTooLarge(limit))
      else cb(null, chunk)
    },
  })
}
