import {parseAuthorization} from '../auth/bearer-header.ts'
import {ToolgateError} from '../errors.ts'
import type {TokenExchanger} from '../token-exchange/exchanger.ts'
import type {InjectedHeader} from './forward-headers.ts'
import type {UpstreamTokenSource} from './types.ts'

/** Where the proxy's outgoing credentials come from (contract §3 steps 5 and 6). */
export interface CredentialSources {
  upstreamToken?: UpstreamTokenSource | undefined
  tokenExchange?: TokenExchanger | undefined
  forwardHeaders: readonly InjectedHeader[]
}

export interface Credentials {
  /** Fields to set on the upstream request: the credential header, then the injected headers. */
  headers: Record<string, string>
  /**
   * The outgoing token these were built from (undefined when there is none). This, not the
   * exchanged token, is what a 401 means was rejected: refreshing it is how to get a new one.
   */
  outgoing: string | undefined
}

/**
 * Builds the upstream credentials for one request: the outgoing token (or `outgoing` when the
 * caller already holds a refreshed one), exchanged per RFC 8693 when token exchange is on — subject
 * = the outgoing token, else the client's own bearer (contract §3) — then the injected headers,
 * which come last so they overwrite what the client sent.
 * Throws ERR_TOKEN_EXCHANGE when there is no subject or the exchange fails.
 */
export async function buildCredentials(
  sources: CredentialSources,
  clientAuthorization: string | readonly string[] | undefined,
  opts: {signal?: AbortSignal | undefined; outgoing?: string | undefined} = {},
): Promise<Credentials> {
  const headers: Record<string, string> = {}
  const outgoing =
    opts.outgoing ??
    (sources.upstreamToken ? await sources.upstreamToken.getToken(opts.signal) : undefined)
  if (sources.tokenExchange) {
    let subject = outgoing
    if (subject === undefined) {
      const parsed = parseAuthorization(clientAuthorization)
      if (parsed.ok) subject = parsed.token
    }
    if (!subject) throw new ToolgateError('ERR_TOKEN_EXCHANGE', 'token exchange: no subject token')
    const exchanged = await sources.tokenExchange.exchange(subject)
    headers[sources.tokenExchange.config.headerName?.toLowerCase() ?? 'authorization'] =
      `Bearer ${exchanged}`
  } else if (outgoing) {
    headers.authorization = `Bearer ${outgoing}`
  }
  for (const h of sources.forwardHeaders) headers[h.name] = h.value
  return {headers, outgoing}
}
