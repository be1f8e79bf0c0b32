import type {Logger} from '../log/logger.ts'
import {BackendLink, type ClientHello} from './backend-link.ts'
import type {BackendTarget} from './backend-target.ts'
import type {BackendConfig} from './config.ts'

/**
 * Whether one backend is reachable, shared by every session of a gateway (issue 37). A session
 * whose link to the backend failed waits here instead of retrying on its own: one probe loop per
 * backend (a fresh initialize, then the session is ended), whatever the number of sessions.
 */

const PROBE_HELLO: ClientHello = {
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: {name: 'toolgate-gateway-probe', version: '1'},
}

export class BackendHealth {
  readonly #backend: BackendConfig
  readonly #target: BackendTarget
  readonly #logger: Logger
  readonly #intervalMs: number
  #waiters: Array<() => void> = []
  #probing = false
  #closed = false

  constructor(
    backend: BackendConfig,
    target: BackendTarget,
    options: {logger: Logger; intervalMs?: number},
  ) {
    this.#backend = backend
    this.#target = target
    this.#logger = options.logger
    this.#intervalMs = options.intervalMs ?? 1_000
  }

  /**
   * Resolves true once a probe reaches the backend, false when `signal` fires first (the session
   * that waited ended: it is forgotten here, and probing stops when nobody waits).
   */
  whenUp(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false)
    const up = new Promise<boolean>((resolve) => {
      const waiter = () => {
        signal.removeEventListener('abort', gone)
        resolve(true)
      }
      const gone = () => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter)
        resolve(false)
      }
      signal.addEventListener('abort', gone, {once: true})
      this.#waiters.push(waiter)
    })
    if (!this.#probing) void this.#probe()
    return up
  }

  close(): void {
    this.#closed = true
    this.#waiters = []
  }

  async #probe(): Promise<void> {
    this.#probing = true
    this.#logger.warn('backend unavailable; probing until it answers', {
      backend: this.#backend.name,
    })
    while (!this.#closed && this.#waiters.length > 0) {
      await new Promise((r) => setTimeout(r, this.#intervalMs).unref())
      if (this.#closed) break
      const link = new BackendLink(
        this.#backend,
        this.#target,
        {onRequest: () => undefined, onNotification: () => undefined, onLost: () => undefined},
        {logger: this.#logger, requestTimeoutMs: 5_000, connectTimeoutMs: 5_000},
      )
      const ok = await link.connect(PROBE_HELLO).then(
        () => true,
        () => false,
      )
      await link.close()
      if (!ok) continue
      this.#logger.info('backend available again', {backend: this.#backend.name})
      const waiters = this.#waiters
      this.#waiters = []
      for (const w of waiters) w()
    }
    this.#probing = false
  }
}
