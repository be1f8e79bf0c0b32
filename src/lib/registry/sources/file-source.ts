import {ToolgateError} from '../../errors.ts'
import type {OutboundClient} from '../../http/outbound.ts'
import {streamRegistryDocument, streamRegistryFileAsync} from './document.ts'
import {fetchBody} from './fetch-body.ts'
import type {LoadResult, SourceLoader} from './loader.ts'
import {describeUrl} from './location.ts'

/** Refuse registry files above this size rather than exhaust memory (100,000 versions ≈ 100 MB). */
export const MAX_DOCUMENT_BYTES = 256 * 1024 * 1024

/** A `file` source read from a local path. */
export class FilePathLoader implements SourceLoader {
  readonly location: string
  readonly path: string

  constructor(path: string) {
    this.path = path
    this.location = path
  }

  async load(): Promise<LoadResult> {
    // Never read whole: validated through a window (in a worker thread), each record read back
    // when consumed.
    let records
    try {
      records = await streamRegistryFileAsync(this.path)
    } catch (err) {
      if (err instanceof ToolgateError) throw err
      const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message
      throw new ToolgateError('ERR_SOURCE_LOAD', `${this.path}: cannot read (${code})`, {
        cause: err,
      })
    }
    return {records, trustOfficialMeta: false}
  }
}

/** A `file` source fetched over http(s) with the shared guarded client (timeout, no redirects). */
export class FileUrlLoader implements SourceLoader {
  readonly location: string
  readonly url: string
  #client: OutboundClient

  constructor(url: string, client: OutboundClient) {
    const parsed = new URL(url)
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new ToolgateError(
        'ERR_CONFIG_INVALID',
        `${describeUrl(url)}: file.url must be http or https`,
      )
    }
    this.url = url
    this.location = describeUrl(url)
    this.#client = client
  }

  async load(signal?: AbortSignal): Promise<LoadResult> {
    const bytes = await fetchBody(this.#client, this.url, {maxBytes: MAX_DOCUMENT_BYTES, signal})
    return {records: streamRegistryDocument(bytes, this.location), trustOfficialMeta: false}
  }
}
