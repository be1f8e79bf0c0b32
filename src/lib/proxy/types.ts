import type {IncomingHttpHeaders} from 'node:http'
import type {Principal} from '../auth/types.ts'

/**
 * Seams of the proxy pipeline (contract §3) that other domains plug into.
 */

/**
 * Where the outgoing credential comes from: a static bearer token (flag/file/env), or the remote
 * OAuth login (src/lib/oauth). `getToken` may wait (login, refresh); `onUnauthorized` is called once
 * when the upstream answers 401 and returns a fresh token to retry with, or undefined to give up.
 */
export interface UpstreamTokenSource {
  getToken(signal?: AbortSignal): Promise<string>
  onUnauthorized?(rejected: string, signal?: AbortSignal): Promise<string | undefined>
  close?(): Promise<void>
}

/** What an interceptor sees of one inbound request, after authentication. */
export interface InterceptedRequest {
  method: string
  path: string
  headers: IncomingHttpHeaders
  /** The whole request body (already bounded by the body limit); empty for GET. */
  body: Buffer
  principal: Principal | undefined
}

/** A complete HTTP answer produced by the proxy itself instead of the upstream. */
export interface LocalAnswer {
  status: number
  headers: Record<string, string>
  body: string
}

/** Upstream response header fields, names lower-case (repeated fields as arrays). */
export type ResponseHeaderFields = Readonly<Record<string, string | string[] | undefined>>

/**
 * Rewrites an upstream response body before it reaches the client. Called once per response with the
 * content type and the response's end-to-end header fields; returns a transform over the body chunks
 * (JSON bodies arrive whole, SSE per chunk). The proxy asks the target for `identity` coding when an
 * interceptor is configured, but a target may compress anyway: `headers['content-encoding']` says so.
 * A returned transform produces a plain body, so the proxy drops `content-encoding` and `content-length`.
 */
export type ResponseRewriter = (
  contentType: string | undefined,
  headers?: ResponseHeaderFields,
) => TransformStream<Uint8Array, Uint8Array> | undefined

/** How an interceptor decided, for the audit trail (issue 35): the deciding Cedar policies. */
export interface DecisionFacts {
  decision: 'allow' | 'deny'
  policies?: string[]
  reason?: string
}

export type InterceptDecision =
  | {action: 'forward'; rewriteResponse?: ResponseRewriter; audit?: DecisionFacts}
  | {action: 'answer'; answer: LocalAnswer; audit?: DecisionFacts}

/**
 * Runs after incoming authentication and before token exchange / forwarding (contract §3 order).
 * Cedar authorization (src/lib/authz) is one. `callUpstream` lets it ask the upstream itself (for
 * example `tools/list` to learn annotations the client cannot spoof), with the request's session headers.
 */
export interface RequestInterceptor {
  intercept(
    request: InterceptedRequest,
    callUpstream: (jsonRpcBody: unknown) => Promise<unknown>,
  ): Promise<InterceptDecision>
}
