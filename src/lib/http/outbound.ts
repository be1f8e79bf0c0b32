import {lookup as dnsLookup, type LookupAddress} from 'node:dns'
import {readFileSync} from 'node:fs'
import type {LookupFunction} from 'node:net'
import {Agent, buildConnector, fetch as undiciFetch, type Dispatcher, type Response} from 'undici'
import {ToolgateError} from '../errors.ts'
import {routedDispatcher} from '../network/dispatcher.ts'
import {currentNetwork, proxyFor, redactProxy} from '../network/settings.ts'
import {blockedRange} from './ip-ranges.ts'

/**
 * Guarded outbound HTTP for calls the tool makes on its own behalf (OIDC discovery, JWKS,
 * introspection, remote OAuth metadata): a timeout on every call, an optional private trust chain,
 * and an SSRF guard on the address actually connected to (contract §1 "Outbound calls", §2).
 *
 * The guard runs at connect time, inside the socket's DNS lookup, so a public-looking name that
 * resolves to 127.0.0.1 (or rebinds between two lookups) is refused as well as a literal address.
 * A name with several addresses is refused when any of them is blocked: deny when unsure.
 */
export interface OutboundOptions {
  /** Whole-request budget (connect, headers and body), default 5 s. */
  timeoutMs?: number
  /** PEM file that becomes the trust chain. It REPLACES the default roots (like a cluster CA bundle). */
  caCertPath?: string
  /** PEM text, same meaning as caCertPath (for callers that already hold it). */
  ca?: string
  /** Allow private, loopback, link-local, unique-local and other non-public destinations. */
  allowPrivateIP?: boolean
  /** DNS resolution, injectable for tests; default node:dns lookup. */
  lookup?: LookupFunction
  /** Where the options came from, used in error messages (e.g. `provider "corp"`). */
  label?: string
}

export interface OutboundRequestInit {
  method?: string
  headers?: Record<string, string> | Headers
  body?: string | URLSearchParams
  signal?: AbortSignal
  /** Default 'manual': a redirect is returned, not followed, so callers decide (and usually refuse). */
  redirect?: 'manual' | 'error' | 'follow'
}

export interface OutboundClient {
  /** fetch-style call; failures are ToolgateErrors ERR_OUTBOUND_BLOCKED / _TIMEOUT / _FAILED. */
  fetch(url: string | URL, init?: OutboundRequestInit): Promise<Response>
  /** fetch + bounded body read + JSON parse, all inside the timeout. */
  fetchJson(
    url: string | URL,
    init?: OutboundRequestInit & {maxBytes?: number},
  ): Promise<JsonResponse>
  readonly dispatcher: Dispatcher
  readonly timeoutMs: number
  close(): Promise<void>
}

export interface JsonResponse {
  status: number
  headers: Headers
  /** Parsed JSON, or undefined when the body was not JSON. */
  body: unknown
}

export const DEFAULT_OUTBOUND_TIMEOUT_MS = 5000
const DEFAULT_MAX_BYTES = 1024 * 1024

export function createOutboundClient(options: OutboundOptions = {}): OutboundClient {
  const timeoutMs = options.timeoutMs ?? DEFAULT_OUTBOUND_TIMEOUT_MS
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new ToolgateError(
      'ERR_CONFIG_INVALID',
      `outbound timeout must be a positive number of milliseconds, got ${timeoutMs}`,
    )
  }
  let ca = options.ca
  if (options.caCertPath !== undefined) {
    try {
      ca = readFileSync(options.caCertPath, 'utf8')
    } catch (err) {
      throw new ToolgateError(
        'ERR_FILE_UNREADABLE',
        `${options.label ? options.label + ': ' : ''}caCertPath ${options.caCertPath} cannot be read`,
        {cause: err},
      )
    }
    if (!ca.includes('-----BEGIN CERTIFICATE-----')) {
      throw new ToolgateError(
        'ERR_CONFIG_INVALID',
        `${options.label ? options.label + ': ' : ''}caCertPath ${options.caCertPath} holds no PEM certificate`,
      )
    }
  }
  const allowPrivate = options.allowPrivateIP === true
  const baseLookup = options.lookup ?? (dnsLookup as LookupFunction)
  // A provider's own caCertPath replaces the roots; otherwise --ca-cert / --use-system-ca (issue 34).
  const network = currentNetwork()
  const trust = ca ?? network.ca
  const trustText =
    options.caCertPath !== undefined ? `caCertPath ${options.caCertPath}` : network.trust.join(', ')
  const connector = buildConnector({
    timeout: timeoutMs,
    ...(trust !== undefined ? {ca: trust} : {}),
    ...(allowPrivate
      ? options.lookup
        ? {lookup: options.lookup}
        : {}
      : {lookup: guardedLookup(baseLookup)}),
  } as buildConnector.BuildOptions)

  const connect: buildConnector.connector = (opts, callback) => {
    // Literal IP hosts never reach the lookup, so they are checked here.
    const host = opts.hostname.startsWith('[') ? opts.hostname.slice(1, -1) : opts.hostname
    if (!allowPrivate && isIpLiteral(host)) {
      const range = blockedRange(host)
      if (range !== undefined) {
        callback(blockedError(host, host, range), null)
        return
      }
    }
    connector(opts, callback)
  }

  const dispatcher = routedDispatcher(
    new Agent({connect, headersTimeout: timeoutMs, bodyTimeout: timeoutMs}),
    network,
    {ca: trust, connectTimeout: timeoutMs, headersTimeout: timeoutMs, bodyTimeout: timeoutMs},
  )

  const doFetch = async (url: string | URL, init: OutboundRequestInit = {}): Promise<Response> => {
    const target = new URL(url)
    const signal = init.signal
      ? AbortSignal.any([init.signal, AbortSignal.timeout(timeoutMs)])
      : AbortSignal.timeout(timeoutMs)
    const proxy = proxyFor(network, target)
    try {
      // Through a proxy the socket goes to the proxy: the destination is checked here instead.
      if (proxy && !allowPrivate)
        await checkDestination(target.hostname, baseLookup, {proxyDns: network.proxyDns, signal})
      return await undiciFetch(target, {
        method: init.method ?? 'GET',
        headers: init.headers as Record<string, string> | undefined,
        body: init.body,
        redirect: init.redirect ?? 'manual',
        signal,
        dispatcher,
      })
    } catch (err) {
      throw toOutboundError(err, target.host, timeoutMs, signal, {
        trust: trustText,
        // A serve provider has its own caCertPath; name it where it applies.
        ...(options.label ? {caCertPath: true} : {}),
        ...(proxy ? {proxy: redactProxy(proxy)} : {}),
      })
    }
  }

  return {
    dispatcher,
    timeoutMs,
    fetch: doFetch,
    async fetchJson(url, init = {}) {
      const target = new URL(url)
      const signal = init.signal
        ? AbortSignal.any([init.signal, AbortSignal.timeout(timeoutMs)])
        : AbortSignal.timeout(timeoutMs)
      const res = await doFetch(target, {...init, signal})
      try {
        const text = await readLimited(res, init.maxBytes ?? DEFAULT_MAX_BYTES, target.host)
        let body: unknown
        try {
          body = JSON.parse(text)
        } catch {
          body = undefined
        }
        return {status: res.status, headers: res.headers as unknown as Headers, body}
      } catch (err) {
        throw toOutboundError(err, target.host, timeoutMs, signal)
      }
    },
    async close() {
      await dispatcher.close()
    },
  }
}

/**
 * The SSRF guard for a request sent through a proxy: a literal address is checked as it is; a
 * name is resolved here (within the request's time) and refused when any address is blocked. A
 * name this machine cannot resolve cannot be checked, so it is refused too — unless `--proxy-dns`
 * says the proxy alone knows such names. (The proxy resolves the name again when it connects: a
 * name that changes its answer in between is not caught; docs/network.md says so.)
 */
async function checkDestination(
  hostname: string,
  lookup: LookupFunction,
  options: {proxyDns: boolean; signal: AbortSignal},
): Promise<void> {
  const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname
  if (isIpLiteral(host)) {
    const range = blockedRange(host)
    if (range !== undefined) throw blockedError(host, host, range)
    return
  }
  const guarded = guardedLookup(lookup)
  const outcome = await new Promise<Error | null>((resolve) => {
    const onAbort = () => resolve(options.signal.reason as Error)
    options.signal.addEventListener('abort', onAbort, {once: true})
    guarded(host, {all: true}, (err: NodeJS.ErrnoException | null) => {
      options.signal.removeEventListener('abort', onAbort)
      resolve(err)
    })
  })
  if (outcome === null) return
  if (outcome instanceof ToolgateError) throw outcome
  if (options.signal.aborted) throw outcome
  if (!options.proxyDns)
    throw new ToolgateError(
      'ERR_OUTBOUND_BLOCKED',
      `outbound request to ${host} refused: the name cannot be resolved here, so its address cannot be checked against private ranges; pass --proxy-dns (network.proxyDns) to let the proxy resolve names only it knows`,
      {details: {host}},
    )
}

function isIpLiteral(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.includes(':')
}

/** Wraps a DNS lookup so that every resolved address is checked before the socket connects. */
export function guardedLookup(base: LookupFunction): LookupFunction {
  return ((
    hostname: string,
    options: {all?: boolean} & Record<string, unknown>,
    callback: (...args: unknown[]) => void,
  ) => {
    base(
      hostname,
      {...options, all: true},
      (err: NodeJS.ErrnoException | null, addresses: string | LookupAddress[]) => {
        if (err) return callback(err)
        const list = Array.isArray(addresses) ? addresses : [{address: addresses, family: 4}]
        if (list.length === 0)
          return callback(
            Object.assign(new Error(`no address for ${hostname}`), {code: 'ENOTFOUND'}),
          )
        for (const a of list) {
          const range = blockedRange(a.address)
          if (range !== undefined) return callback(blockedError(hostname, a.address, range))
        }
        if (options.all) callback(null, list)
        else callback(null, list[0]!.address, list[0]!.family)
      },
    )
  }) as LookupFunction
}

function blockedError(host: string, address: string, range: string): ToolgateError {
  const via = host === address ? '' : ` (resolved to ${address})`
  return new ToolgateError(
    'ERR_OUTBOUND_BLOCKED',
    `outbound request to ${host} refused: ${range} address${via} is not allowed; set allowPrivateIP to reach it`,
    {details: {host, address, range}},
  )
}

async function readLimited(res: Response, maxBytes: number, host: string): Promise<string> {
  const declared = Number(res.headers.get('content-length'))
  if (Number.isFinite(declared) && declared > maxBytes) {
    await res.body?.cancel().catch(() => {})
    throw new ToolgateError(
      'ERR_OUTBOUND_FAILED',
      `response from ${host} exceeds ${maxBytes} bytes`,
    )
  }
  if (!res.body) return ''
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of res.body) {
    size += chunk.byteLength
    if (size > maxBytes) {
      await res.body.cancel().catch(() => {})
      throw new ToolgateError(
        'ERR_OUTBOUND_FAILED',
        `response from ${host} exceeds ${maxBytes} bytes`,
      )
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** Maps what undici throws to one of our codes. Messages name the host, never the path or query. */
export function toOutboundError(
  err: unknown,
  host: string,
  timeoutMs: number,
  signal?: AbortSignal,
  /** What was in force: the trusted CAs in words, the proxy used (redacted). */
  context: {trust?: string; proxy?: string; caCertPath?: boolean} = {},
): ToolgateError {
  const chain: unknown[] = []
  for (
    let e: unknown = err;
    e !== undefined && e !== null && chain.length < 8;
    e = (e as {cause?: unknown}).cause
  ) {
    chain.push(e)
    // Happy eyeballs (one try per address) reports an AggregateError: its errors say what failed.
    const inner = (e as {errors?: unknown}).errors
    if (Array.isArray(inner)) chain.push(...inner.slice(0, 4))
  }
  const own = chain.find((e): e is ToolgateError => e instanceof ToolgateError)
  if (own) return own
  const codes = chain.map((e) => String((e as {code?: unknown}).code ?? ''))
  const names = chain.map((e) => String((e as {name?: unknown}).name ?? ''))
  const timedOut =
    (signal?.aborted && (signal.reason as {name?: string} | undefined)?.name === 'TimeoutError') ||
    names.includes('TimeoutError') ||
    codes.some(
      (c) =>
        c === 'UND_ERR_CONNECT_TIMEOUT' ||
        c === 'UND_ERR_HEADERS_TIMEOUT' ||
        c === 'UND_ERR_BODY_TIMEOUT',
    )
  if (timedOut) {
    return new ToolgateError(
      'ERR_OUTBOUND_TIMEOUT',
      `outbound request to ${host} timed out after ${timeoutMs} ms`,
      {cause: err, details: {host}},
    )
  }
  const tlsCode = codes.find((c) =>
    /CERT|SELF_SIGNED|UNABLE_TO|ERR_TLS|ERR_SSL|HOSTNAME|ALTNAME/.test(c),
  )
  if (tlsCode) {
    const trusted = context.trust
      ? `trusted: ${context.trust}; add the CA with ${context.caCertPath ? "the provider's caCertPath, " : ''}--ca-cert, NODE_EXTRA_CA_CERTS or --use-system-ca`
      : 'check caCertPath'
    return new ToolgateError(
      'ERR_OUTBOUND_FAILED',
      `outbound request to ${host} failed TLS verification (${tlsCode}); ${trusted}`,
      {cause: err, details: {host, reason: tlsCode}},
    )
  }
  const refused = chain
    .map((e) => /Proxy response \((\d+)\)/.exec(String((e as Error)?.message))?.[1])
    .find(Boolean)
  if (context.proxy && refused) {
    return new ToolgateError(
      'ERR_OUTBOUND_FAILED',
      `outbound request to ${host}: the proxy ${context.proxy} refused it (HTTP ${refused}${refused === '407' ? ', proxy credentials missing or wrong' : ''})`,
      {cause: err, details: {host, proxy: context.proxy, status: Number(refused)}},
    )
  }
  const last = chain.at(-1) as {message?: unknown} | undefined
  const reason =
    codes.find((c) => c !== '' && c !== 'undefined') ??
    names.find((n) => n && n !== 'TypeError' && n !== 'Error') ??
    (typeof last?.message === 'string' && last.message
      ? last.message.slice(0, 80)
      : 'network error')
  const via = context.proxy ? ` through the proxy ${context.proxy}` : ''
  return new ToolgateError(
    'ERR_OUTBOUND_FAILED',
    `outbound request to ${host}${via} failed (${reason})`,
    {cause: err, details: {host, reason}},
  )
}
