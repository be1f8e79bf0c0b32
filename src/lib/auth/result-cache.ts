import {createHash} from 'node:crypto'
import type {Principal} from './types.ts'

/**
 * Bounded LRU of accepted tokens, keyed by the SHA-256 of the token so the token itself is never
 * held (a heap dump or a debug print of the cache shows no credential). An entry lives no longer
 * than the token's `exp` and the TTL chosen by the validator (short for introspection, so a
 * revoked opaque token stops working soon).
 *
 * Only acceptances are cached. Rejections are not: a rejection caused by a provider outage must
 * not outlive the outage, and an attacker can vary a bad token at will, so a negative cache would
 * protect nothing while delaying recovery.
 */
export interface CacheEntry {
  principal: Principal
  /** Milliseconds since the epoch. */
  expiresAt: number
}

export class ResultCache {
  readonly #max: number
  readonly #now: () => number
  readonly #map = new Map<string, CacheEntry>()

  constructor(maxEntries: number, now: () => number = Date.now) {
    this.#max = maxEntries
    this.#now = now
  }

  static keyOf(token: string): string {
    return createHash('sha256').update(token).digest('base64url')
  }

  get(key: string): Principal | undefined {
    const entry = this.#map.get(key)
    if (!entry) return undefined
    if (entry.expiresAt <= this.#now()) {
      this.#map.delete(key)
      return undefined
    }
    // Map iteration order is insertion order: re-inserting marks the entry most recently used.
    this.#map.delete(key)
    this.#map.set(key, entry)
    return entry.principal
  }

  set(key: string, entry: CacheEntry): void {
    if (this.#max <= 0 || entry.expiresAt <= this.#now()) return
    this.#map.delete(key)
    this.#map.set(key, entry)
    while (this.#map.size > this.#max) {
      const oldest = this.#map.keys().next().value
      if (oldest === undefined) break
      this.#map.delete(oldest)
    }
  }

  get size(): number {
    return this.#map.size
  }

  clear(): void {
    this.#map.clear()
  }
}
