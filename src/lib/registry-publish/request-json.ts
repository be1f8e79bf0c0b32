import type {IncomingMessage} from 'node:http'
import {ToolgateError} from '../errors.ts'
import {readBody} from '../http/respond.ts'
import {describeAmbiguity, unambiguousJsonText} from '../mcp/strict-json.ts'

/** A server.json is a few KiB; this bounds what one publish may make the server buffer. */
export const MAX_PUBLISH_BYTES = 256 * 1024

/**
 * The JSON body of a write request, judged exactly as it will be stored: `application/json` only
 * (a form post from a browser page is not JSON), strict UTF-8, no duplicate keys (two parsers must
 * not see two documents: the policy decides on the one we store), and a bounded size.
 */
export async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const type = (req.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase()
  if (type !== 'application/json') {
    throw new ToolgateError('ERR_UNSUPPORTED_MEDIA_TYPE', 'content-type: must be application/json')
  }
  const bytes = await readBody(req, MAX_PUBLISH_BYTES).catch((err: unknown) => {
    if (err instanceof ToolgateError) throw err
    // The client went away mid-upload: a 400 nobody reads, not a server fault to log.
    throw new ToolgateError('ERR_BAD_PARAMETER', 'body: the upload ended before its end')
  })
  const checked = unambiguousJsonText(bytes)
  if (!('text' in checked)) {
    throw new ToolgateError('ERR_BAD_PARAMETER', `body: ${describeAmbiguity(checked)}`)
  }
  try {
    return JSON.parse(checked.text) as unknown
  } catch (err) {
    throw new ToolgateError('ERR_BAD_PARAMETER', `body: not JSON (${(err as Error).message})`)
  }
}
