import {ToolgateError, type ErrorCode} from '../errors.ts'
import {createOutboundClient, type OutboundClient} from '../http/outbound.ts'
import {isRecord} from '../mcp/json-rpc.ts'
import type {ServerEntry} from '../registry/types.ts'
import {clean} from './format.ts'

/**
 * A client of any MCP registry API v0.1 (`toolgate serve`'s `…/registry/<name>` or the official
 * registry's root): pages with cursors, one version, publish and status. Errors carry the
 * registry's own message and the code its status means (docs/registry-cli.md).
 */
export interface ListFilters {
  search?: string
  version?: string
  updatedSince?: string
  transport?: string
  type?: string
  registryType?: string
}

export interface Page {
  servers: ServerEntry[]
  nextCursor?: string
}

export interface RegistryClientOptions {
  /** A bearer token for protected registries, asked for once per request (it may refresh). */
  token?: () => Promise<string>
  timeoutMs?: number
}

const PAGE_MAX = 100
// 1,000,000 entries at 100 a page: past that a registry is not paging, it is looping.
const MAX_PAGES = 10_000
// A page of 100 entries with long descriptions and package lists stays well under this.
const MAX_BODY = 8 * 1024 * 1024

export class RegistryClient {
  readonly base: URL
  readonly #http: OutboundClient
  readonly #token: (() => Promise<string>) | undefined

  constructor(base: string, options: RegistryClientOptions = {}) {
    this.base = parseRegistryBase(base)
    // The user typed this URL: a registry next to them on a private network is fine.
    this.#http = createOutboundClient({
      timeoutMs: options.timeoutMs ?? 30_000,
      allowPrivateIP: true,
      label: 'registry',
    })
    this.#token = options.token
  }

  close(): Promise<void> {
    return this.#http.close()
  }

  /** One page of `/v0.1/servers`. */
  async page(filters: ListFilters, limit: number, cursor?: string): Promise<Page> {
    const q = new URLSearchParams()
    if (cursor) q.set('cursor', cursor)
    q.set('limit', String(Math.min(Math.max(limit, 1), PAGE_MAX)))
    const params: [keyof ListFilters, string][] = [
      ['search', 'search'],
      ['version', 'version'],
      ['updatedSince', 'updated_since'],
      ['transport', 'transport'],
      ['type', 'type'],
      ['registryType', 'registryType'],
    ]
    for (const [key, name] of params) {
      const v = filters[key]
      if (v !== undefined) q.set(name, v)
    }
    const body = await this.#call('GET', `servers?${q}`)
    if (!isRecord(body) || !Array.isArray(body.servers)) throw this.#odd('a list without "servers"')
    const meta = isRecord(body.metadata) ? body.metadata : {}
    const next =
      typeof meta.nextCursor === 'string' && meta.nextCursor !== '' ? meta.nextCursor : undefined
    return {servers: body.servers.filter(isEntry), ...(next ? {nextCursor: next} : {})}
  }

  /**
   * Entries in registry order until `max` (undefined: all of them), fetching 100 a page. A cursor
   * the registry already gave (A, B, A…), or more than MAX_PAGES pages, would walk for ever: the
   * walk ends with an error instead.
   */
  async *entries(filters: ListFilters, max?: number): AsyncGenerator<ServerEntry, {more: boolean}> {
    let cursor: string | undefined
    let count = 0
    const seen = new Set<string>()
    for (;;) {
      const want = max === undefined ? PAGE_MAX : Math.min(PAGE_MAX, max - count)
      const page = await this.page(filters, want, cursor)
      for (const entry of page.servers) {
        if (max !== undefined && count >= max) return {more: true}
        count++
        yield entry
      }
      if (!page.nextCursor) return {more: false}
      if (max !== undefined && count >= max) return {more: true}
      // A cursor seen before (A, B, A…) or an endless walk would never end: stop with an error.
      if (seen.has(page.nextCursor)) throw this.#odd('a nextCursor it had already given')
      if (seen.size >= MAX_PAGES) throw this.#odd(`more than ${MAX_PAGES} pages`)
      seen.add(page.nextCursor)
      cursor = page.nextCursor
    }
  }

  /** One version (`latest` allowed). */
  async version(name: string, version: string): Promise<ServerEntry> {
    const body = await this.#call(
      'GET',
      `servers/${encodeURIComponent(name)}/versions/${encodeURIComponent(version)}`,
    )
    if (!isRecord(body) || !isRecord(body.server)) throw this.#odd('a version without "server"')
    return body as unknown as ServerEntry
  }

  /** Every version of one server. */
  async versions(name: string): Promise<ServerEntry[]> {
    const body = await this.#call('GET', `servers/${encodeURIComponent(name)}/versions`)
    if (!isRecord(body) || !Array.isArray(body.servers))
      throw this.#odd('versions without "servers"')
    return body.servers.filter(isEntry)
  }

  async publish(serverJsonText: string): Promise<ServerEntry> {
    return (await this.#call('POST', 'publish', serverJsonText)) as ServerEntry
  }

  async setStatus(name: string, version: string, status: string): Promise<ServerEntry> {
    const path = `servers/${encodeURIComponent(name)}/versions/${encodeURIComponent(version)}/status`
    return (await this.#call('PATCH', path, JSON.stringify({status}))) as ServerEntry
  }

  async #call(method: string, path: string, body?: string): Promise<unknown> {
    const url = new URL(`v0.1/${path}`, this.base)
    const headers: Record<string, string> = {accept: 'application/json'}
    if (body !== undefined) headers['content-type'] = 'application/json'
    if (this.#token) headers.authorization = `Bearer ${await this.#token()}`
    const res = await this.#http.fetchJson(url, {
      method,
      headers,
      ...(body !== undefined ? {body} : {}),
      maxBytes: MAX_BODY,
    })
    if (res.status >= 200 && res.status < 300) return res.body
    throw refusal(res.status, res.body, res.headers, `${method} ${describe(url)}`)
  }

  #odd(what: string): ToolgateError {
    return new ToolgateError(
      'ERR_UPSTREAM',
      `the registry at ${describe(this.base)} answered ${what}`,
    )
  }
}

/** An element a table can show: anything else a registry sends in a list is left out. */
function isEntry(value: unknown): value is ServerEntry {
  return (
    isRecord(value) &&
    isRecord(value.server) &&
    typeof value.server.name === 'string' &&
    typeof value.server.version === 'string'
  )
}

/** The registry's own words, with the code its status stands for (docs/exit-codes.md). */
function refusal(status: number, body: unknown, headers: Headers, what: string): ToolgateError {
  // The registry's words reach a terminal: cleaned like everything else it sends.
  const said = isRecord(body) && typeof body.error === 'string' ? clean(body.error) : undefined
  const problems =
    isRecord(body) && Array.isArray(body.errors)
      ? body.errors
          .slice(0, 20)
          .filter(isRecord)
          .map((e) => `  ${clean(e.pointer, 200) || '(document)'}: ${clean(e.message, 300)}`)
      : []
  const codes: Record<number, ErrorCode> = {
    400: 'ERR_BAD_PARAMETER',
    401: 'ERR_AUTH_INVALID_TOKEN',
    403: 'ERR_FORBIDDEN',
    404: 'ERR_NOT_FOUND',
    409: 'ERR_CONFLICT',
    413: 'ERR_BODY_TOO_LARGE',
    415: 'ERR_UNSUPPORTED_MEDIA_TYPE',
    429: 'ERR_RATE_LIMITED',
  }
  const code = codes[status] ?? 'ERR_UPSTREAM'
  const retry = status === 429 ? headers.get('retry-after') : null
  const hint =
    status === 401
      ? ' (a protected registry: pass --remote-auth or --remote-auth-bearer-token-file)'
      : ''
  const message =
    `${what}: ${status}${said ? ` ${said}` : ''}${retry ? ` (retry after ${retry} s)` : ''}${hint}` +
    (problems.length > 1 ? `\n${problems.join('\n')}` : '')
  return new ToolgateError(code, message, {details: {status}})
}

/** The base URL that `v0.1/…` is resolved against, always ending in `/`. */
export function parseRegistryBase(base: string): URL {
  let url: URL
  try {
    url = new URL(base)
  } catch {
    throw new ToolgateError('ERR_USAGE', `--registry: "${base.slice(0, 120)}" is not a URL`)
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new ToolgateError('ERR_USAGE', '--registry: the registry URL must be http(s)')
  if (url.username || url.password)
    throw new ToolgateError(
      'ERR_USAGE',
      '--registry: put no credentials in the URL (use the auth flags)',
    )
  url.search = ''
  url.hash = ''
  // Accept the API root as people copy it: `…/registry/team`, `…/registry/team/`, `…/v0.1`.
  url.pathname = url.pathname.replace(/\/+$/, '').replace(/\/v0\.1(\/servers)?$/, '') + '/'
  return url
}

function describe(url: URL): string {
  return `${url.origin}${url.pathname}`
}
