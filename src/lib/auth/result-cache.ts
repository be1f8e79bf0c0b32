import {hash} from 'node:crypto'
import {LruCache} from '../cache/lru.ts'
import type {Principal} from './types.ts'

/**
 * Bounded LRU of accepted tokens, keyed by the SHA-256 of the token so the token itself is never
 * held (a heap dump or a debug print of the cache shows no credential). An entry lives no longer
 * than the token's `exp` and the TTL chosen by the validator (short for introspection, so a
 * revoked opaque token stops working soon): that is the entry's expiry in the LRU.
 *
 * Only acceptances are cached. Rejections are not: a rejection caused by a provider outage must
 * not outlive the outage, and an attacker can vary a bad token at will, so a negative cache would
 * protect nothing while delaying recovery.
 */
export type ResultCache = LruCache<string, Principal>

/** `maxEntries` 0 (or less) disables caching. */
export function createResultCache(maxEntries: number, now: () => number = Date.now): ResultCache {
  return new LruCache({maxEntries: Math.max(0, maxEntries), now})
}

export function tokenCacheKey(token: string): string {
  // One-shot hash: about a third cheaper than createHash().update().digest() on the hot path.
  return hash('sha256', token, 'base64url')
}
