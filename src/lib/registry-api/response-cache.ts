/**
 * A bounded cache of finished registry response bodies (UTF-8 bytes), keyed by the request's
 * route and query text and tagged with the store's data version. Registry data changes only when a
 * source syncs, while clients ask for the same pages over and over (first page, `version=latest`),
 * so a hit skips SQL, assembly and UTF-8 encoding entirely. Any change of the data version drops
 * every entry: a cached body is never older than the data a fresh read would return.
 *
 * Least recently used entries go first once `maxBytes` is reached; bodies larger than
 * `maxEntryBytes` are not kept, so one huge page cannot flush the hot ones.
 */
export interface ResponseCacheOptions {
  maxBytes: number
  maxEntryBytes?: number
}

export class ResponseCache {
  readonly maxBytes: number
  readonly maxEntryBytes: number
  #entries = new Map<string, Buffer>()
  #bytes = 0
  #version: number | string | undefined

  constructor(options: ResponseCacheOptions) {
    this.maxBytes = Math.max(0, options.maxBytes)
    this.maxEntryBytes = Math.min(this.maxBytes, options.maxEntryBytes ?? this.maxBytes / 8)
  }

  get size(): number {
    return this.#entries.size
  }

  get bytes(): number {
    return this.#bytes
  }

  /** The body stored under `key` for data version `version`, or undefined. */
  get(key: string, version: number | string): Buffer | undefined {
    if (version !== this.#version) {
      this.#reset(version)
      return undefined
    }
    const hit = this.#entries.get(key)
    if (hit !== undefined) {
      // Map keeps insertion order: re-inserting makes this the most recently used.
      this.#entries.delete(key)
      this.#entries.set(key, hit)
    }
    return hit
  }

  set(key: string, version: number | string, body: Buffer): void {
    if (version !== this.#version) this.#reset(version)
    if (body.length > this.maxEntryBytes) return
    const old = this.#entries.get(key)
    if (old !== undefined) {
      this.#entries.delete(key)
      this.#bytes -= old.length
    }
    this.#entries.set(key, body)
    this.#bytes += body.length
    for (const [k, v] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break
      this.#entries.delete(k)
      this.#bytes -= v.length
    }
  }

  #reset(version: number | string): void {
    this.#entries.clear()
    this.#bytes = 0
    this.#version = version
  }
}
