import {ToolgateError} from '../errors.ts'
import {createOutboundClient, type OutboundClient, type OutboundRequestInit} from '../http/outbound.ts'

/** A fetch as oauth4webapi's `customFetch` and our own requests use it. */
export type FetchLike = (url: string, init?: RequestInit) => Promise<Response>

/**
 * The two kinds of outbound HTTP of the remote login (contract §2), both on the shared guarded
 * client (src/lib/http/outbound.ts: timeout on every call, SSRF check on the address actually
 * connected to). `trusted` is for URLs the operator typed (target, issuer, explicit endpoints);
 * `learned` for URLs read from remote documents (resource_metadata, authorization_servers,
 * endpoints in metadata), which may reach private, loopback, link-local or unique-local addresses
 * only when `allowPrivateLearned` (the operator's own starting URL is on one).
 */
export interface OAuthHttp {
  trusted: FetchLike
  learned: FetchLike
  close(): Promise<void>
}

export interface OAuthHttpOptions {
  allowPrivateLearned: boolean
  timeoutMs?: number
}

function asFetch(client: OutboundClient, learned: boolean): FetchLike {
  return async (url, init = {}) => {
    try {
      const response = await client.fetch(url, init as OutboundRequestInit)
      // undici's Response; oauth4webapi accepts it (it compares Symbol.toStringTag).
      return response as unknown as Response
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
  const trusted = createOutboundClient({allowPrivateIP: true, timeoutMs, label: 'remote auth'})
  const learned = options.allowPrivateLearned ? trusted : createOutboundClient({allowPrivateIP: false, timeoutMs, label: 'remote auth'})
  return {
    trusted: asFetch(trusted, false),
    learned: asFetch(learned, true),
    async close() {
      await trusted.close()
      if (learned !== trusted) await learned.close()
    },
  }
}
