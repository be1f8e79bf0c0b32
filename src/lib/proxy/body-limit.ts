import {Transform, type Readable, type TransformCallback} from 'node:stream'
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

/**
 * Reads a body whose length was declared and already checked against the limit (the usual
 * JSON-RPC POST). Plain listeners instead of an async iterator: this runs once per small request,
 * on the proxy's hot path. The limit is enforced again in case the declared length lied.
 */
export function readDeclaredBody(req: Readable, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let first: Buffer | undefined
    let parts: Buffer[] | undefined
    let size = 0
    let ended = false
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        req.destroy()
        reject(bodyTooLarge(limit))
      } else if (first === undefined) first = chunk
      else (parts ??= [first]).push(chunk)
    })
    req.once('end', () => {
      ended = true
      resolve(parts ? Buffer.concat(parts, size) : (first ?? Buffer.alloc(0)))
    })
    req.once('error', reject)
    req.once('close', () => {
      if (!ended) reject(new Error('request body aborted'))
    })
  })
}
