import {createHash} from 'node:crypto'
import {ANONYMOUS_KEY, type PrincipalKey} from './principal-key.ts'

/**
 * The one table of MCP sessions and their owners (contract §8), used by `run`'s stdio bridge for
 * the sessions it creates and by the proxy front for the sessions an upstream creates. A session
 * belongs to the principal whose request created it; any other principal presenting its id is
 * treated exactly like an unknown id.
 *
 * Quotas keep one principal from locking out another: at most `maxPerPrincipal` sessions each
 * (429 past it) and `maxTotal` in all (503). Without incoming authentication every caller is the
 * one anonymous principal, which is bounded by `maxTotal` alone. A session that sent nothing after `initialize`
 * expires after `unusedMs`, any other after `idleMs` without traffic — unless a stream of it is
 * open (a client listening is not idle).
 */
export interface SessionLimits {
  maxPerPrincipal: number
  maxTotal: number
  /** A session that never sent a request after initialize ends this long after it was created. */
  unusedMs: number
  /** A session with no request and no open stream for this long ends. */
  idleMs: number
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = {
  maxPerPrincipal: 64,
  maxTotal: 1024,
  unusedMs: 60_000,
  idleMs: 10 * 60_000,
}

export interface SessionEntry<T> {
  readonly id: string
  readonly owner: PrincipalKey
  readonly value: T
  readonly createdAt: number
  lastSeen: number
  /** A request (not a notification, not the initialize) has been seen in this session. */
  used: boolean
  /** Streams of this session open now (GET streams, legacy SSE, answers being streamed). */
  open: number
}

export type SessionAdmission =
  {ok: true} | {ok: false; status: 429 | 503; message: string; retryAfterSeconds: number}

export class SessionTable<T> {
  readonly #sessions = new Map<string, SessionEntry<T>>()
  readonly #perOwner = new Map<PrincipalKey, number>()
  readonly limits: SessionLimits
  readonly #now: () => number

  constructor(limits: Partial<SessionLimits> = {}, now: () => number = Date.now) {
    this.limits = {...DEFAULT_SESSION_LIMITS, ...limits}
    this.#now = now
  }

  get size(): number {
    return this.#sessions.size
  }

  countOf(owner: PrincipalKey): number {
    return this.#perOwner.get(owner) ?? 0
  }

  /** Whether `owner` may open one more session now. */
  admit(owner: PrincipalKey): SessionAdmission {
    const {maxPerPrincipal, maxTotal, unusedMs} = this.limits
    const retryAfterSeconds = Math.max(1, Math.ceil(unusedMs / 1000))
    if (owner !== ANONYMOUS_KEY && this.countOf(owner) >= maxPerPrincipal) {
      return {
        ok: false,
        status: 429,
        message: `too many sessions for this caller (${maxPerPrincipal}); end one with DELETE, or wait for unused ones to expire`,
        retryAfterSeconds,
      }
    }
    if (this.#sessions.size >= maxTotal) {
      return {ok: false, status: 503, message: 'too many sessions', retryAfterSeconds}
    }
    return {ok: true}
  }

  add(id: string, owner: PrincipalKey, value: T): SessionEntry<T> {
    this.delete(id)
    const now = this.#now()
    const entry: SessionEntry<T> = {
      id,
      owner,
      value,
      createdAt: now,
      lastSeen: now,
      used: false,
      open: 0,
    }
    this.#sessions.set(id, entry)
    this.#perOwner.set(owner, this.countOf(owner) + 1)
    return entry
  }

  /** The session, if it exists and belongs to `owner`; another principal's session is not found. */
  find(id: string, owner: PrincipalKey): SessionEntry<T> | undefined {
    const entry = this.#sessions.get(id)
    if (!entry || entry.owner !== owner) return undefined
    entry.lastSeen = this.#now()
    return entry
  }

  /** Whether the id exists under another owner (for a log line; the caller still answers 404). */
  ownedByAnother(id: string, owner: PrincipalKey): boolean {
    const entry = this.#sessions.get(id)
    return entry !== undefined && entry.owner !== owner
  }

  /** A request (not the initialize, not a notification) was seen in the session. */
  markUsed(id: string): void {
    const entry = this.#sessions.get(id)
    if (entry) entry.used = true
  }

  has(id: string): boolean {
    return this.#sessions.has(id)
  }

  delete(id: string): SessionEntry<T> | undefined {
    const entry = this.#sessions.get(id)
    if (!entry) return undefined
    this.#sessions.delete(id)
    const left = this.countOf(entry.owner) - 1
    if (left > 0) this.#perOwner.set(entry.owner, left)
    else this.#perOwner.delete(entry.owner)
    return entry
  }

  values(): IterableIterator<SessionEntry<T>> {
    return this.#sessions.values()
  }

  /**
   * Removes and returns the sessions past their time: unused ones after `unusedMs`, others after
   * `idleMs` since their last request. `busy` says whether something of a session is still open
   * (a stream, a request in flight) besides what `open` counts.
   */
  expire(busy: (entry: SessionEntry<T>) => boolean = () => false): SessionEntry<T>[] {
    const now = this.#now()
    const out: SessionEntry<T>[] = []
    for (const entry of [...this.#sessions.values()]) {
      if (entry.open > 0 || busy(entry)) continue
      const limit = entry.used ? this.limits.idleMs : this.limits.unusedMs
      const since = entry.used ? entry.lastSeen : entry.createdAt
      if (now - since < limit) continue
      this.delete(entry.id)
      out.push(entry)
    }
    return out
  }
}

/** A short, stable, non-reversible name for a session id in logs (the id itself is a capability). */
export function sessionTag(id: string): string {
  return createHash('sha256').update(id).digest('hex').slice(0, 12)
}
