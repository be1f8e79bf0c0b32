/**
 * Token buckets per caller (docs/serve.md "Rate limits"): each key holds up to `burst` tokens,
 * refilled at `perSecond`; a request takes one or is refused with the seconds until one is back.
 * Memory is bounded: at `maxKeys`, the buckets that are full again (equivalent to absent) are
 * dropped, then the oldest; a flood of distinct keys costs each new key at most a full bucket.
 */
export interface RateSpec {
  perSecond: number
  burst: number
}

interface Bucket {
  tokens: number
  at: number
}

export type Take = {ok: true} | {ok: false; retryAfterSeconds: number}

export class RateLimiter {
  readonly spec: RateSpec
  readonly #buckets = new Map<string, Bucket>()
  readonly #maxKeys: number
  readonly #now: () => number

  constructor(spec: RateSpec, options: {maxKeys?: number; now?: () => number} = {}) {
    this.spec = spec
    this.#maxKeys = options.maxKeys ?? 100_000
    this.#now = options.now ?? (() => performance.now())
  }

  take(key: string): Take {
    const now = this.#now()
    let b = this.#buckets.get(key)
    if (b) {
      b.tokens = Math.min(this.spec.burst, b.tokens + ((now - b.at) / 1000) * this.spec.perSecond)
      b.at = now
    } else {
      if (this.#buckets.size >= this.#maxKeys) this.#evict(now)
      b = {tokens: this.spec.burst, at: now}
      this.#buckets.set(key, b)
    }
    if (b.tokens >= 1) {
      b.tokens -= 1
      return {ok: true}
    }
    return {
      ok: false,
      retryAfterSeconds: Math.max(1, Math.ceil((1 - b.tokens) / this.spec.perSecond)),
    }
  }

  get size(): number {
    return this.#buckets.size
  }

  #evict(now: number): void {
    for (const [key, b] of this.#buckets) {
      if (b.tokens + ((now - b.at) / 1000) * this.spec.perSecond >= this.spec.burst)
        this.#buckets.delete(key)
    }
    // Still full of live buckets: drop the oldest tenth (Map order is insertion order).
    if (this.#buckets.size >= this.#maxKeys) {
      let drop = Math.ceil(this.#maxKeys / 10)
      for (const key of this.#buckets.keys()) {
        if (drop-- <= 0) break
        this.#buckets.delete(key)
      }
    }
  }
}
