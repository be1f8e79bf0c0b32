import {ToolgateError} from '../errors.ts'
import {
  createOutboundClient,
  type OutboundClient,
  type OutboundRequestInit,
} from '../http/outbound.ts'

/** A fetch as oauth4webapi's `customFetch` and our own requests use it. */
export type FetchLike = (url: string, init?: RequestInit) => Promise<Response>

/**
 * The two kinds of outbound HTTP of the remote login (contract §2), both on the shared guarded
 * client (src/lib/http/outbound.ts: timeout on every call, SSRF check on the address actually
 * connected to). `trusted` is for URLs the operator typed (target, issuer, explicit endpoints);
 * `learned` for URLs read from remote documents (resource_metadata, authorization_servers,
 * endpoints in metadata), which may reach private, loopback, link-local or unique-local addresses
 * only when `allowPrivateLearned` (the operator's own starting URL is on one). Every response body
 * is capped (`maxBytes`), so a hostile or broken server cannot make the login read without bound.
 */
export interface OAuthHttp {
  trusted: FetchLike
  learned: FetchLike
  close(): Promise<void>
}

export interface OAuthHttpOptions {
  allowPrivateLearned: boolean
  timeoutMs?: number
  /** Largest response body read (metadata, registration, token responses); default 1 MiB. */
  maxBytes?: number
}

/** The same cap as the guarded client's fetchJson: OAuth documents and token responses are small. */
export const DEFAULT_OAUTH_MAX_BYTES = 1024 * 1024

const tooLarge = (host: string, maxBytes: number) =>
  new ToolgateError('ERR_OUTBOUND_FAILED', `response from ${host} exceeds ${maxBytes} bytes`, {
    details: {host},
  })

/** Statuses whose Response must have a null body (Fetch standard "null body status"). */
const NULL_BODY = new Set([101, 103, 204, 205, 304])

/**
 * Hands oauth4webapi (which reads bodies with `response.json()`, unbounded) a Response whose body
 * stops with ERR_OUTBOUND_FAILED after `maxBytes`. The cap is applied while reading rather than by
 * buffering, so a caller that only wants the status and headers (the target probe, which may be an
 * endless SSE stream) can still cancel the body. A declared Content-Length over the cap fails at once.
 */
export function capBody(response: Response, host: string, maxBytes: number): Response {
  const declared = Number(response.headers.get('content-length') ?? NaN)
  const source = response.body
  if (!source || NULL_BODY.has(response.status)) return response
  const reader = source.getReader()
  let size = 0
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (Number.isFinite(declared) && declared > maxBytes) {
        await reader.cancel().catch(() => {})
        controller.error(tooLarge(host, maxBytes))
        return
      }
      try {
        const {done, value} = await reader.read()
        if (done) {
          controller.close()
          return
        }
        size += value.byteLength
        if (size > maxBytes) {
          await reader.cancel().catch(() => {})
          controller.error(tooLarge(host, maxBytes))
          return
        }
        controller.enqueue(value)
      } catch (err) {
        controller.error(err)
      }
    },
    async cancel(reason) {
      await reader.cancel(reason).catch(() => {})
    },
  })
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  })
}

function asFetch(client: OutboundClient, learned: boolean, maxBytes: number): FetchLike {
  return async (url, init = {}) => {
    try {
      const response = await client.fetch(url, init as OutboundRequestInit)
      // undici's Response, re-wrapped in a global one with a capped body (oauth4webapi compares
      // Symbol.toStringTag, so either would be accepted).
      return capBody(response as unknown as Response, new URL(url).host, maxBytes)
    } catch (err) {
      if (learned && err instanceof ToolgateError && err.code === 'ERR_OUTBOUND_BLOCKED') {
        throw new ToolgateError(
          'ERR_OUTBOUND_BLOCKED',
          `refusing to contact ${new URL(url).host}: a URL learned from a remote document leads to a private address, and the URL you gave is public`,
          {cause: err, details: err.details},
        )
      }
      throw err
    }
  }
}

export function createOAuthHttp(options: OAuthHttpOptions): OAuthHttp {
  const timeoutMs = options.timeoutMs ?? 10_000
  const maxBytes = options.maxBytes ?? DEFAULT_OAUTH_MAX_BYTES
  const trusted = createOutboundClient({allowPrivateIP: true, timeoutMs, label: 'remote auth'})
  const learned = options.allowPrivateLearned
    ? trusted
    : createOutboundClient({allowPrivateIP: false, timeoutMs, label: 'remote auth'})
  return {
    trusted: asFetch(trusted, false, maxBytes),
    learned: asFetch(learned, true, maxBytes),
    async close() {
      await trusted.close()
      if (learned !== trusted) await learned.close()
    },
  }
}
