import type {IncomingMessage} from 'node:http'
import {ToolgateError} from '../errors.ts'

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
    if (size > limit)
      throw new ToolgateError('ERR_BODY_TOO_LARGE', `request body exceeds ${limit} bytes`)
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks)
}
