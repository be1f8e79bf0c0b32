import type {Logger} from '../log/logger.ts'

/**
 * One bound on what the bridge holds for clients that do not read (issue 30, finding 5): the
 * bytes written to every open stream and not yet taken by its reader. Each stream also has its
 * own bound (sse-writer.ts); this one stops many slow streams from adding up — 30 unread streams
 * and 40 broadcasts of 1 MiB once took the process from 96 to 670 MB. Past the budget the stream
 * with the most unread bytes (the slowest reader) is cut first, with a log line.
 */
export const DEFAULT_BUFFER_BUDGET = 64 * 1024 * 1024

export interface Buffered {
  /** Bytes written and not yet flushed to the reader. */
  readonly unread: number
  /** Cuts the stream (its reader sees it end). */
  cut(): void
}

export class BufferBudget {
  readonly #lagging = new Set<Buffered>()
  readonly #maxBytes: number
  readonly #logger: Logger | undefined

  constructor(maxBytes = DEFAULT_BUFFER_BUDGET, logger?: Logger) {
    this.#maxBytes = maxBytes
    this.#logger = logger
  }

  /** Called after a write: keeps the total within the budget. */
  charge(stream: Buffered): void {
    if (stream.unread > 0) this.#lagging.add(stream)
    let total = 0
    for (const s of this.#lagging) total += s.unread
    while (total > this.#maxBytes && this.#lagging.size > 0) {
      let slowest: Buffered | undefined
      for (const s of this.#lagging) if (!slowest || s.unread > slowest.unread) slowest = s
      const s = slowest!
      total -= s.unread
      this.#logger?.warn('cut the slowest client stream: the bridge buffer budget is used up', {
        unreadBytes: s.unread,
        budgetBytes: this.#maxBytes,
      })
      this.#lagging.delete(s)
      s.cut()
    }
  }

  /** The stream caught up or closed. */
  release(stream: Buffered): void {
    this.#lagging.delete(stream)
  }

  get total(): number {
    let total = 0
    for (const s of this.#lagging) total += s.unread
    return total
  }
}
