/**
 * A bounded least-recently-used map with an optional expiry per entry. One implementation for the
 * token-result cache (auth: entries expire with the token) and the Cedar decision cache (authz: no
 * expiry). Map iteration order is insertion order, so re-inserting an entry marks it most recently
 * used and the first key is always the eviction candidate: O(1) get and set.
 */
export interface LruOptions {
  /** Entries kept at most; 0 disables the cache (set is a no-op). */
  maxEntries: number
  /** Milliseconds since the epoch; injected so tests control time. */
  now?: () => number
}

interface Slot<V> {
  value: V
  /** Milliseconds since the epoch; Infinity when the entry never expires. */
  expiresAt: number
}

export class LruCache<K, V> {
  readonly #max: number
  readonly #now: () => number
  readonly #map = new Map<K, Slot<V>>()

  constructor(options: LruOptions) {
    const {maxEntries} = options
    if (!Number.isInteger(maxEntries) || maxEntries < 0) {
      throw new RangeError(`cache size must be a non-negative integer, got ${maxEntries}`)
    }
    this.#max = maxEntries
    this.#now = options.now ?? Date.now
  }

  get(key: K): V | undefined {
    const slot = this.#map.get(key)
    if (slot === undefined) return undefined
    this.#map.delete(key)
    if (slot.expiresAt <= this.#now()) return undefined
    this.#map.set(key, slot)
    return slot.value
  }

  /** Stores `value`; `expiresAt` (ms since the epoch) already past means nothing is stored. */
  set(key: K, value: V, expiresAt = Infinity): void {
    if (this.#max === 0) return
    this.#map.delete(key)
    if (expiresAt <= this.#now()) return
    this.#map.set(key, {value, expiresAt})
    while (this.#map.size > this.#max) {
      const oldest = this.#map.keys().next()
      if (oldest.done === true) break
      this.#map.delete(oldest.value)
    }
  }

  delete(key: K): boolean {
    return this.#map.delete(key)
  }

  /** Entries held, including expired ones not yet looked up (they go on get or eviction). */
  get size(): number {
    return this.#map.size
  }

  clear(): void {
    this.#map.clear()
  }
}
