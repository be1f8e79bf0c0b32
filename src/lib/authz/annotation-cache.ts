/**
 * Tool annotations as the upstream server itself lists them, per upstream (one cache per
 * interceptor, one interceptor per proxied server). Learned from `tools/list` responses passing
 * through the proxy and, for a tool not seen yet, fetched with a `tools/list` of our own. Never
 * taken from a client's request: a client could otherwise claim `readOnlyHint: true` for anything.
 */
import {isRecord} from '../mcp/json-rpc.ts'
import {ANNOTATION_NAMES, type ToolAnnotations} from './entity-model.ts'

export type ListFetcher = (cursor: string | undefined) => Promise<unknown>

const MAX_PAGES = 50
const MAX_TOOLS = 100_000

export function annotationsOf(tool: Record<string, unknown>): ToolAnnotations {
  const out: ToolAnnotations = {}
  const a = tool.annotations
  if (!isRecord(a)) return out
  for (const n of ANNOTATION_NAMES) if (typeof a[n] === 'boolean') out[n] = a[n]
  return out
}

export class AnnotationCache {
  readonly #tools = new Map<string, ToolAnnotations>()
  readonly #now: () => number
  readonly #refetchAfterMs: number
  #lastFetch = -Infinity
  #inflight: Promise<void> | undefined

  constructor(options: {now?: () => number; refetchAfterMs?: number} = {}) {
    this.#now = options.now ?? Date.now
    this.#refetchAfterMs = options.refetchAfterMs ?? 10_000
  }

  /** Learns from one page of a `tools/list` result; a complete first page replaces everything. */
  learn(tools: readonly unknown[], completeList: boolean): void {
    if (completeList) this.#tools.clear()
    for (const t of tools) {
      if (!isRecord(t) || typeof t.name !== 'string') continue
      if (this.#tools.size >= MAX_TOOLS && !this.#tools.has(t.name)) break
      this.#tools.set(t.name, annotationsOf(t))
    }
  }

  /**
   * Annotations of `name`; lists the upstream's tools when the name is unknown (at most once per
   * `refetchAfterMs`, shared by concurrent callers). Unknown after that → undefined (no annotations,
   * so a guarded policy does not apply).
   */
  async get(name: string, fetchPage: ListFetcher): Promise<ToolAnnotations | undefined> {
    const known = this.#tools.get(name)
    if (known) return known
    if (!this.#inflight && this.#now() - this.#lastFetch >= this.#refetchAfterMs) {
      this.#lastFetch = this.#now()
      this.#inflight = this.#fetchAll(fetchPage).finally(() => {
        this.#inflight = undefined
      })
    }
    if (this.#inflight) await this.#inflight.catch(() => undefined)
    return this.#tools.get(name)
  }

  async #fetchAll(fetchPage: ListFetcher): Promise<void> {
    let cursor: string | undefined
    const seen: unknown[] = []
    for (let page = 0; page < MAX_PAGES; page++) {
      const answer = await fetchPage(cursor)
      const result = isRecord(answer) ? answer.result : undefined
      if (!isRecord(result) || !Array.isArray(result.tools)) return
      seen.push(...result.tools)
      cursor =
        typeof result.nextCursor === 'string' && result.nextCursor !== ''
          ? result.nextCursor
          : undefined
      if (cursor === undefined) {
        this.learn(seen, true)
        return
      }
    }
    this.learn(seen, false)
  }
}
