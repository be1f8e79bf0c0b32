import {randomUUID} from 'node:crypto'
import type {IncomingMessage, ServerResponse} from 'node:http'
import type {Logger} from '../log/logger.ts'
import {
  decodePrincipalField,
  PRINCIPAL_FIELD,
  type PrincipalKey,
} from '../sessions/principal-key.ts'
import {sessionTag, type SessionTable} from '../sessions/session-table.ts'
import type {BufferBudget} from './buffer-budget.ts'
import {answerJson} from './http-common.ts'
import {LaneRefused, type BridgeLane, type LaneSource} from './lane.ts'
import {errorMessage, type ClientSink} from './multiplexer.ts'

/**
 * What the bridge's two transports (streamable HTTP, legacy SSE) share: the session table with its
 * owners and quotas (src/lib/sessions), the lanes sessions run on, and the buffer budget. A
 * session belongs to the principal the proxy front named in the request (the private socket is
 * reached by the front alone); another principal gets what an unknown id gets.
 */

export interface BridgeSession extends ClientSink {
  readonly id: string
  lane: BridgeLane | undefined
  /** Something of the session is open or in flight, so it is not idle. */
  busy(): boolean
}

export interface BridgeContext {
  lanes: LaneSource
  table: SessionTable<BridgeSession>
  budget: BufferBudget
  maxBodyBytes: number
  logger: Logger
}

/** "Session not found" — for an unknown id and for another principal's id alike. */
const SESSION_NOT_FOUND = errorMessage(null, -32001, 'Session not found')

export function ownerOf(req: IncomingMessage): PrincipalKey {
  return decodePrincipalField(req.headers[PRINCIPAL_FIELD])
}

/**
 * Opens a session for `owner`: within the quotas, on a lane from the lane source (which may start
 * a process). On refusal the client has its answer (429/503 with Retry-After) and undefined is
 * returned.
 */
export async function openSession<S extends BridgeSession>(
  ctx: BridgeContext,
  owner: PrincipalKey,
  res: ServerResponse,
  make: (id: string) => S,
): Promise<S | undefined> {
  const admission = ctx.table.admit(owner)
  if (!admission.ok) {
    ctx.logger.info('session refused', {reason: admission.message})
    answerJson(res, admission.status, errorMessage(null, -32000, admission.message), {
      'retry-after': String(admission.retryAfterSeconds),
    })
    return undefined
  }
  const session = make(randomUUID())
  // In the table before the lane is ready: concurrent opens count against the quota at once.
  ctx.table.add(session.id, owner, session)
  try {
    session.lane = await ctx.lanes.acquire(owner, session.id)
  } catch (err) {
    ctx.table.delete(session.id)
    const retry = err instanceof LaneRefused ? err.retryAfterSeconds : 5
    ctx.logger.warn('session refused', {reason: (err as Error).message})
    answerJson(res, 503, errorMessage(null, -32000, (err as Error).message), {
      'retry-after': String(retry),
    })
    return undefined
  }
  session.lane.mux.open(session.id, session, owner)
  return session
}

/** The caller's own session with this id, or undefined (and a 404 answered). */
export function findSession<S extends BridgeSession>(
  ctx: BridgeContext,
  id: string,
  req: IncomingMessage,
  res: ServerResponse,
): S | undefined {
  const owner = ownerOf(req)
  const entry = ctx.table.find(id, owner)
  if (entry?.value.lane) return entry.value as S
  if (ctx.table.ownedByAnother(id, owner))
    ctx.logger.warn('refused a session id presented by another principal', {
      session: sessionTag(id),
    })
  answerJson(res, 404, SESSION_NOT_FOUND)
  return undefined
}

/** Forgets a session everywhere: its lane's multiplexer, the lane source, the table. */
export function closeSession(ctx: BridgeContext, session: BridgeSession, reason: string): void {
  ctx.table.delete(session.id)
  const lane = session.lane
  if (!lane) return
  lane.mux.close(session.id, reason)
  ctx.lanes.release(lane, session.id)
}
