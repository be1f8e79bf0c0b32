import {ToolgateError} from '../../errors.ts'
import type {OutboundClient} from '../../http/outbound.ts'
import {OFFICIAL_META_KEY, type ServerJson} from '../types.ts'
import {RecordStream} from './document.ts'
import {fetchBody} from './fetch-body.ts'
import type {LoadResult, SourceLoader} from './loader.ts'
import {describeUrl} from './location.ts'

const API_PAGE_LIMIT = 100
// One page is at most 100 entries; 16 MiB leaves room for very large server.json documents.
const MAX_PAGE_BYTES = 16 * 1024 * 1024

/**
 * An `api` source: pages through another registry's `GET <endpoint>/v0.1/servers?limit=100`
 * (MCP registry API v0.1) following `metadata.nextCursor` until it is absent. The walk is bounded
 * (page count, a cursor seen twice is a loop) and each request has its own timeout. The upstream
 * official `_meta` block of each entry is kept (it owns publishedAt/updatedAt/status there).
 */
export interface ApiLoaderOptions {
  /** The shared guarded client: its timeout bounds each page request; redirects are not followed. */
  client: OutboundClient
  maxPages: number
}

export class ApiLoader implements SourceLoader {
  readonly location: string
  readonly endpoint: string
  #options: ApiLoaderOptions

  constructor(endpoint: string, options: ApiLoaderOptions) {
    const parsed = new URL(endpoint)
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new ToolgateError(
        'ERR_CONFIG_INVALID',
        `${describeUrl(endpoint)}: api.endpoint must be http or https`,
      )
    }
    this.endpoint = endpoint
    this.location = describeUrl(endpoint)
    this.#options = options
  }

  pageUrl(cursor: string | undefined): string {
    const u = new URL(this.endpoint)
    u.pathname = `${u.pathname.replace(/\/+$/, '')}/v0.1/servers`
    u.searchParams.set('limit', String(API_PAGE_LIMIT))
    if (cursor !== undefined) u.searchParams.set('cursor', cursor)
    return u.toString()
  }

  async load(signal?: AbortSignal): Promise<LoadResult> {
    // Entries are kept as JSON text until the store consumes them: compact, and parsed one by one.
    const texts: string[] = []
    const seen = new Set<string>()
    let cursor: string | undefined
    for (let page = 0; ; page++) {
      if (page >= this.#options.maxPages) {
        throw new ToolgateError(
          'ERR_SOURCE_LOAD',
          `${this.location}: more than ${this.#options.maxPages} pages`,
        )
      }
      const bytes = await fetchBody(this.#options.client, this.pageUrl(cursor), {
        maxBytes: MAX_PAGE_BYTES,
        signal,
      })
      const text = bytes.toString('utf8')
      const body = parseListBody(text, `${this.location} (page ${page + 1})`)
      for (const entry of body.entries) texts.push(JSON.stringify(entry))
      if (body.nextCursor === undefined) break
      if (seen.has(body.nextCursor)) {
        throw new ToolgateError(
          'ERR_SOURCE_LOAD',
          `${this.location}: the upstream returned the same cursor twice`,
        )
      }
      seen.add(body.nextCursor)
      cursor = body.nextCursor
    }
    const records = new RecordStream(texts.length, () => texts, {
      listEntries: true,
      afterParse: mergeOfficial,
    })
    return {records, trustOfficialMeta: true}
  }
}

/** Validates one list body: `{"servers":[{server,_meta}…],"metadata":{"nextCursor"?}}`. */
function parseListBody(
  text: string,
  where: string,
): {entries: unknown[]; nextCursor: string | undefined} {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch (err) {
    throw new ToolgateError(
      'ERR_SOURCE_LOAD',
      `${where}: not valid JSON (${(err as Error).message})`,
      {cause: err},
    )
  }
  if (!body || typeof body !== 'object' || !Array.isArray((body as {servers?: unknown}).servers)) {
    throw new ToolgateError('ERR_SOURCE_LOAD', `${where}: expected {"servers":[…],"metadata":{…}}`)
  }
  const metadata = (body as {metadata?: unknown}).metadata
  let nextCursor: string | undefined
  if (metadata !== undefined && metadata !== null) {
    if (typeof metadata !== 'object')
      throw new ToolgateError('ERR_SOURCE_LOAD', `${where}: metadata must be an object`)
    const nc = (metadata as {nextCursor?: unknown}).nextCursor
    if (nc !== undefined && nc !== null && nc !== '') {
      if (typeof nc !== 'string')
        throw new ToolgateError('ERR_SOURCE_LOAD', `${where}: metadata.nextCursor must be a string`)
      nextCursor = nc
    }
  }
  return {entries: (body as {servers: unknown[]}).servers, nextCursor}
}

/**
 * Moves the entry's official block into the server's `_meta`, where the store reads trusted
 * upstream metadata from, replacing whatever the server.json itself claimed.
 */
function mergeOfficial(record: unknown, entry: unknown): void {
  const server = record as ServerJson
  const entryMeta = (entry as {_meta?: unknown})._meta
  const block =
    entryMeta && typeof entryMeta === 'object'
      ? (entryMeta as Record<string, unknown>)[OFFICIAL_META_KEY]
      : undefined
  const own = {...(server._meta ?? {})}
  delete own[OFFICIAL_META_KEY]
  if (block !== undefined) own[OFFICIAL_META_KEY] = block
  if (Object.keys(own).length > 0) server._meta = own
  else delete server._meta
}
