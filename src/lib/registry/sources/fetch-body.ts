import {ToolgateError} from '../../errors.ts'
import {toOutboundError, type OutboundClient} from '../../http/outbound.ts'
import {describeUrl} from './location.ts'

export interface FetchBodyOptions {
  /** Largest body accepted; a larger declared Content-Length fails before reading. */
  maxBytes: number
  /** Cancels the request (the syncer stopping). */
  signal?: AbortSignal
}

/**
 * GETs `url` through the shared guarded client and returns the raw body bytes (a file source keeps
 * them as bytes: decoding a 256 MiB document to one string would double its memory). The client
 * bounds the whole exchange, body included, by its timeout and does not follow redirects: a 3xx
 * fails naming its status, like any other non-2xx. Failures are ERR_SOURCE_LOAD naming the URL
 * without its query or credentials (describeUrl), never the Location of a redirect.
 */
export async function fetchBody(
  client: OutboundClient,
  url: string,
  options: FetchBodyOptions,
): Promise<Buffer> {
  const where = describeUrl(url)
  const target = new URL(url)
  if (target.username !== '' || target.password !== '') {
    // fetch refuses such URLs, and its error would quote the URL, credentials included.
    throw new ToolgateError('ERR_SOURCE_LOAD', `${where}: credentials in the URL are not supported`)
  }
  try {
    const res = await client.fetch(url, {
      headers: {accept: 'application/json'},
      ...(options.signal ? {signal: options.signal} : {}),
    })
    if (!res.ok) {
      await res.body?.cancel().catch(() => {})
      const redirect = res.status >= 300 && res.status < 400
      throw new ToolgateError(
        'ERR_SOURCE_LOAD',
        `${where}: HTTP ${res.status}` +
          (redirect ? ' (redirects are not followed; configure the final URL)' : ''),
      )
    }
    const tooLarge = () =>
      new ToolgateError('ERR_SOURCE_LOAD', `${where}: body larger than ${options.maxBytes} bytes`)
    const declared = Number(res.headers.get('content-length'))
    if (Number.isFinite(declared) && declared > options.maxBytes) {
      await res.body?.cancel().catch(() => {})
      throw tooLarge()
    }
    const chunks: Uint8Array[] = []
    let size = 0
    if (res.body) {
      // Leaving the loop early (throw) cancels the stream and frees the connection.
      for await (const chunk of res.body) {
        size += chunk.byteLength
        if (size > options.maxBytes) throw tooLarge()
        chunks.push(chunk)
      }
    }
    return Buffer.concat(chunks, size)
  } catch (err) {
    if (err instanceof ToolgateError && err.code === 'ERR_SOURCE_LOAD') throw err
    if (options.signal?.aborted) {
      throw new ToolgateError('ERR_SOURCE_LOAD', `${where}: cancelled`, {cause: err})
    }
    // The client's errors name the host only; ours name the described URL instead.
    const mapped = toOutboundError(err, target.host, client.timeoutMs)
    if (mapped.code === 'ERR_OUTBOUND_TIMEOUT') {
      throw new ToolgateError(
        'ERR_SOURCE_LOAD',
        `${where}: timed out after ${client.timeoutMs} ms`,
        {
          cause: err,
        },
      )
    }
    const reason = mapped.details?.reason ?? mapped.code
    throw new ToolgateError('ERR_SOURCE_LOAD', `${where}: request failed (${String(reason)})`, {
      cause: err,
    })
  }
}
