import {lookup as dnsLookup, type LookupAddress, type LookupOptions} from 'node:dns'
import {isIP} from 'node:net'
import {Agent, fetch as undiciFetch, type Dispatcher} from 'undici'
import {ToolgateError} from '../errors.ts'
import {isPrivateAddress} from './private-address.ts'

/** A fetch as oauth4webapi's `customFetch` and our own requests use it. */
export type FetchLike = (url: string, init?: RequestInit) => Promise<Response>

/**
 * The two kinds of outbound HTTP of the remote login (contract §2): `trusted` for URLs the operator
 * typed (target, issuer, explicit endpoints), `learned` for URLs read from remote documents
 * (resource_metadata, authorization_servers, endpoints in metadata). `learned` refuses private,
 * loopback, link-local and unique-local addresses unless `allowPrivateLearned` (the operator's own
 * URL is on one), checked on the address actually connected to so DNS tricks do not bypass it.
 * Every request is bounded by `timeoutMs`.
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

const BLOCKED = 'TOOLGATE_OUTBOUND_BLOCKED'

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void

function guardedLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, {...options, all: true}, (err, addresses) => {
    if (err) return callback(err, '')
    const list = addresses as LookupAddress[]
    if (list.length === 0 || list.some((a) => isPrivateAddress(a.address))) {
      const e: NodeJS.ErrnoException = new Error(`${hostname} resolves to a private address`)
      e.code = BLOCKED
      return callback(e, '')
    }
    const first = list[0] as LookupAddress
    if (options.all) callback(null, list)
    else callback(null, first.address, first.family)
  })
}

function causeCode(err: unknown): string | undefined {
  let e: unknown = err
  for (let i = 0; i < 4 && e && typeof e === 'object'; i++) {
    const code = (e as {code?: unknown}).code
    if (typeof code === 'string' && code !== 'ERR_INVALID_ARG_TYPE') return code
    e = (e as {cause?: unknown}).cause
  }
  return undefined
}

function makeFetch(dispatcher: Dispatcher, guard: boolean, timeoutMs: number): FetchLike {
  return async (url, init = {}) => {
    const target = new URL(url)
    const host = target.hostname.replace(/^\[|\]$/g, '')
    // An IP literal never goes through lookup, so it is judged here.
    if (guard && isIP(host) && isPrivateAddress(host)) {
      throw new ToolgateError('ERR_OUTBOUND_BLOCKED', `refusing to contact ${target.origin}: a URL learned from a remote document points at a private address`)
    }
    const timeout = AbortSignal.timeout(timeoutMs)
    const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout
    try {
      // undici's own fetch, so the dispatcher (and its guarded lookup) is the one from this package.
      return (await undiciFetch(url, {...(init as object), signal, dispatcher})) as unknown as Response
    } catch (err) {
      if (causeCode(err) === BLOCKED) {
        throw new ToolgateError('ERR_OUTBOUND_BLOCKED', `refusing to contact ${target.origin}: a URL learned from a remote document resolves to a private address`, {cause: err})
      }
      if (timeout.aborted) {
        throw new ToolgateError('ERR_OUTBOUND_TIMEOUT', `${target.origin} did not answer within ${timeoutMs} ms`, {cause: err})
      }
      if (init.signal?.aborted) throw err
      throw new ToolgateError('ERR_OAUTH_FLOW', `cannot reach ${target.origin}: ${causeCode(err) ?? (err as Error).message}`, {cause: err})
    }
  }
}

export function createOAuthHttp(options: OAuthHttpOptions): OAuthHttp {
  const timeoutMs = options.timeoutMs ?? 10_000
  const common = {connectTimeout: timeoutMs, headersTimeout: timeoutMs, bodyTimeout: timeoutMs}
  const trustedAgent = new Agent(common)
  const learnedAgent = options.allowPrivateLearned ? trustedAgent : new Agent({...common, connect: {lookup: guardedLookup}})
  return {
    trusted: makeFetch(trustedAgent, false, timeoutMs),
    learned: makeFetch(learnedAgent, !options.allowPrivateLearned, timeoutMs),
    async close() {
      await trustedAgent.close()
      if (learnedAgent !== trustedAgent) await learnedAgent.close()
    },
  }
}
