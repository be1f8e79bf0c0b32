import type {IncomingMessage} from 'node:http'
import type {Logger} from '../log/logger.ts'
import type {PrincipalKey} from './principal-key.ts'
import {SessionTable, sessionTag, type SessionLimits} from './session-table.ts'

/**
 * The proxy front's half of session ownership (issue 30, contract §8), for upstreams that make
 * their own sessions: `proxy`, `run --url`, `run --transport streamable-http|sse`. The front
 * remembers which principal's request created each upstream `Mcp-Session-Id` (from the response
 * head) and each legacy SSE session (from the stream's `endpoint` event), and refuses the id to
 * everyone else before anything is forwarded — with what an unknown id gets, 404. An id the front
 * never saw created is unknown too (after a restart, clients initialize again: MCP clients do so
 * on 404). Quotas and expiry are the session table's.
 *
 * `run`'s stdio bridge makes its own sessions and keeps them in the same kind of table
 * (bridge/bridge-sessions.ts), so the front does not track them twice.
 */

export const SESSION_NOT_FOUND_BODY =
  '{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}'

export interface GuardRefusal {
  status: number
  body: string
  headers: Record<string, string>
}

/** One request's passage through the guard, from its head to the end of its response. */
export interface GuardTicket {
  /** The upstream's response head: records a new session; a refusal replaces the response. */
  onHead(statusCode: number, rawHeaders: readonly (Buffer | string)[]): GuardRefusal | undefined
  /** Response body bytes, watched only on a legacy SSE stream until its `endpoint` event. */
  observe: ((chunk: Buffer) => void) | undefined
  /** The exchange is over (response finished or the client left). */
  done(): void
}

export type GuardOutcome = {ok: true; ticket: GuardTicket} | {ok: false; refusal: GuardRefusal}

// What a legacy SSE stream may send before its endpoint event is given up on.
const ENDPOINT_SCAN_BYTES = 64 * 1024
// Distinct legacy endpoint paths remembered (a hostile upstream cannot grow the set without bound).
const MAX_LEGACY_PATHS = 64

export class SessionGuard {
  /** Owners only: the key (`mcp <id>`, `legacy <endpoint>`) says what kind of session it is. */
  readonly table: SessionTable<null>
  readonly #log: Logger
  /**
   * Paths that legacy endpoint events named (a server has one or two). A POST with a query to one
   * of them names a legacy session: the caller's own live one, or it is not found — also after
   * the stream that created it closed.
   */
  readonly #legacyPaths = new Set<string>()
  readonly #sweep: NodeJS.Timeout

  constructor(log: Logger, limits: Partial<SessionLimits> = {}, now?: () => number) {
    this.table = new SessionTable(limits, now)
    this.#log = log
    this.#sweep = setInterval(() => this.expire(), 5_000)
    this.#sweep.unref()
  }

  close(): void {
    clearInterval(this.#sweep)
  }

  /** Forgets sessions past their time (the upstream keeps them until its own expiry). */
  expire(): number {
    return this.table.expire().length
  }

  check(req: IncomingMessage, owner: PrincipalKey): GuardOutcome {
    const url = req.url ?? '/'
    const method = req.method ?? 'GET'
    const sid = req.headers['mcp-session-id']
    if (typeof sid === 'string' && sid !== '') return this.#inSession(`mcp ${sid}`, method, owner)
    const q = url.indexOf('?')
    if (q !== -1 && this.#legacyPaths.has(url.slice(0, q)))
      return this.#inSession(`legacy ${url}`, method, owner)
    // No session named: this request may create one (initialize, or a legacy SSE stream).
    if (method === 'POST' || method === 'GET') {
      const admission = this.table.admit(owner)
      if (!admission.ok) {
        this.#log.info('session refused', {reason: admission.message})
        return {
          ok: false,
          refusal: {
            status: admission.status,
            body: JSON.stringify({
              jsonrpc: '2.0',
              id: null,
              error: {code: -32000, message: admission.message},
            }),
            headers: {'retry-after': String(admission.retryAfterSeconds)},
          },
        }
      }
    }
    return {ok: true, ticket: this.#creating(url, method, owner)}
  }

  #inSession(key: string, method: string, owner: PrincipalKey): GuardOutcome {
    const entry = this.table.find(key, owner)
    if (!entry) {
      if (this.table.ownedByAnother(key, owner))
        this.#log.warn('refused a session id presented by another principal', {
          session: sessionTag(key),
        })
      return {ok: false, refusal: {status: 404, body: SESSION_NOT_FOUND_BODY, headers: {}}}
    }
    if (method !== 'DELETE') this.table.markUsed(key)
    entry.open++
    let closed = false
    return {
      ok: true,
      ticket: {
        onHead: (status) => {
          // The upstream ended it, or does not know it (any more): forget it here too.
          if (method === 'DELETE' ? status < 300 || status === 404 : status === 404)
            this.table.delete(key)
          return undefined
        },
        observe: undefined,
        done: () => {
          if (closed) return
          closed = true
          entry.open--
        },
      },
    }
  }

  #creating(url: string, method: string, owner: PrincipalKey): GuardTicket {
    let legacy: LegacyScan | undefined
    let created: string | undefined
    const ticket: GuardTicket = {
      onHead: (_status, raw) => {
        const sid = headerValue(raw, 'mcp-session-id')
        if (sid !== undefined && sid !== '') {
          const key = `mcp ${sid}`
          if (this.table.has(key) && this.table.ownedByAnother(key, owner)) {
            // An upstream that hands one id to two callers would join their sessions.
            this.#log.error('the upstream returned a session id that belongs to another caller', {
              session: sessionTag(key),
            })
            return {
              status: 502,
              body: '{"error":"upstream reused a session id"}',
              headers: {},
            }
          }
          if (!this.table.has(key)) this.table.add(key, owner, null)
          return undefined
        }
        const type = headerValue(raw, 'content-type') ?? ''
        if (method === 'GET' && type.toLowerCase().startsWith('text/event-stream')) {
          legacy = new LegacyScan(url, (endpoint) => {
            const key = `legacy ${endpoint}`
            if (this.table.has(key)) return
            this.table.add(key, owner, null).open++
            created = key
            if (this.#legacyPaths.size < MAX_LEGACY_PATHS)
              this.#legacyPaths.add(endpoint.slice(0, endpoint.indexOf('?')))
          })
          ticket.observe = (chunk) => legacy?.take(chunk)
        }
        return undefined
      },
      observe: undefined,
      // A legacy session lives as long as its stream.
      done: () => {
        if (created !== undefined) this.table.delete(created)
        created = undefined
      },
    }
    return ticket
  }
}

/** First value of a response field in raw (name, value) pairs; names compared case-insensitively. */
function headerValue(raw: readonly (Buffer | string)[], name: string): string | undefined {
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const n = raw[i]!
    const text = typeof n === 'string' ? n : n.toString('latin1')
    if (text.length === name.length && text.toLowerCase() === name) {
      const v = raw[i + 1]!
      return typeof v === 'string' ? v : v.toString('latin1')
    }
  }
  return undefined
}

/**
 * Watches the start of a legacy SSE stream for its `endpoint` event (MCP 2024-11-05: the URL to
 * POST to, with the session in its query), resolved against the stream's own URL to the path and
 * query clients will send. Gives up after ENDPOINT_SCAN_BYTES.
 */
class LegacyScan {
  #text = ''
  #done = false
  readonly #base: string
  readonly #found: (endpoint: string) => void

  constructor(streamUrl: string, found: (endpoint: string) => void) {
    this.#base = streamUrl
    this.#found = found
  }

  take(chunk: Buffer): void {
    if (this.#done) return
    this.#text += chunk.toString('utf8')
    for (;;) {
      const end = this.#text.search(/\r?\n\r?\n/)
      if (end === -1) break
      const event = this.#text.slice(0, end)
      this.#text = this.#text.slice(end).replace(/^\r?\n\r?\n/, '')
      const lines = event.split(/\r?\n/)
      if (!lines.some((l) => /^event:\s*endpoint\s*$/.test(l))) continue
      const data = lines
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).replace(/^ /, ''))
        .join('\n')
      this.#done = true
      let u: URL
      try {
        u = new URL(data, new URL(this.#base, 'http://front.invalid'))
      } catch {
        return
      }
      if (u.search !== '') this.#found(u.pathname + u.search)
      return
    }
    if (this.#text.length > ENDPOINT_SCAN_BYTES) this.#done = true
  }
}
