/**
 * A bounded LRU map. Decisions are cached by the full Cedar request: policies and entities_json are
 * immutable once loaded, so the same request always gets the same answer.
 */
export class LruCache<V> {
  readonly #max: number
  readonly #map = new Map<string, V>()

  constructor(max: number) {
    if (!Number.isInteger(max) || max < 0) throw new RangeError('cache size must be a non-negative integer')
    this.#max = max
  }

  get(key: string): V | undefined {
    const v = this.#map.get(key)
    if (v === undefined) return undefined
    // Map keeps insertion order: re-inserting marks the entry most recently used.
    this.#map.delete(key)
    this.#map.set(key, v)
    return v
  }

  set(key: string, value: V): void {
    if (this.#max === 0) return
    this.#map.delete(key)
    this.#map.set(key, value)
    if (this.#map.size > this.#max) {
      const oldest = this.#map.keys().next().value
      if (oldest !== undefined) this.#map.delete(oldest)
    }
  }

  get size(): number {
    return this.#map.size
  }
}
