import {ToolgateError} from '../../errors.ts'
import {blockedRange} from '../../http/ip-ranges.ts'
import {isLoopbackHost} from '../../http/loopback.ts'
import {createOutboundClient, toOutboundError, type OutboundClient} from '../../http/outbound.ts'
import {describeUrl} from './location.ts'

/** Redirects followed before giving up (release assets and "latest" links redirect once or twice). */
export const MAX_REDIRECTS = 5
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])

/** Whether the operator's own URL names a private or loopback host (an IP literal or localhost). */
export function operatorUrlIsPrivate(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '')
  return isLoopbackHost(host) || (/^[\d.]+$|:/.test(host) && blockedRange(host) !== undefined)
}

export interface FetchBodyOptions {
  /** Largest body accepted; a larger declared Content-Length fails before reading. */
  maxBytes: number
  /** Cancels the request (the syncer stopping). */
  signal?: AbortSignal
}

/**
 * GETs `url` through the shared guarded client and returns the raw body bytes (a file source keeps
 * them as bytes: decoding a 256 MiB document to one string would double its memory). The client
 * bounds each exchange, body included, by its timeout. Up to MAX_REDIRECTS redirects are followed;
 * a redirect target is a URL learned from a remote answer, so (contract §2) it may reach private or
 * loopback addresses only when the operator's URL is itself on one, and https never downgrades to
 * http. Failures are ERR_SOURCE_LOAD naming the configured URL without its query or credentials
 * (describeUrl), never the Location of a redirect (it may carry a signed query).
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
  let strict: OutboundClient | undefined
  let hopClient = client
  let current = target
  try {
    let res = await hopClient.fetch(current.href, {
      headers: {accept: 'application/json'},
      ...(options.signal ? {signal: options.signal} : {}),
    })
    for (let hop = 1; REDIRECT_STATUSES.has(res.status); hop++) {
      const location = res.headers.get('location')
      await res.body?.cancel().catch(() => {})
      if (!location) break
      const fail = (why: string) => new ToolgateError('ERR_SOURCE_LOAD', `${where}: ${why}`)
      if (hop > MAX_REDIRECTS) throw fail(`more than ${MAX_REDIRECTS} redirects`)
      const next = new URL(location, current)
      if (next.protocol !== 'http:' && next.protocol !== 'https:')
        throw fail(`redirect to a ${next.protocol} URL refused`)
      if (current.protocol === 'https:' && next.protocol === 'http:')
        throw fail('redirect from https to http refused')
      if (next.username !== '' || next.password !== '')
        throw fail('redirect to a URL with credentials refused')
      if (!operatorUrlIsPrivate(target) && hopClient === client) {
        strict = createOutboundClient({timeoutMs: client.timeoutMs})
        hopClient = strict
      }
      current = next
      res = await hopClient.fetch(current.href, {
        headers: {accept: 'application/json'},
        ...(options.signal ? {signal: options.signal} : {}),
      })
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => {})
      throw new ToolgateError('ERR_SOURCE_LOAD', `${where}: HTTP ${res.status}`)
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
    if (mapped.code === 'ERR_OUTBOUND_BLOCKED' && current !== target) {
      throw new ToolgateError(
        'ERR_SOURCE_LOAD',
        `${where}: a redirect led to a private or loopback address, which is refused for a public source URL`,
        {cause: err},
      )
    }
    const reason = mapped.details?.reason ?? mapped.code
    throw new ToolgateError('ERR_SOURCE_LOAD', `${where}: request failed (${String(reason)})`, {
      cause: err,
    })
  } finally {
    await strict?.close()
  }
}
