/**
 * The MCP-aware authorization step of the proxy pipeline (contract §3 order: after incoming auth,
 * before token exchange and forwarding). It reads the buffered JSON-RPC body, applies the method
 * table of contract §6, decides mapped methods with Cedar, filters list results, and answers
 * denials itself with the exact JSON-RPC 403 body.
 */
import type {Logger} from '../log/logger.ts'
import {
  INVALID_REQUEST,
  PARSE_ERROR,
  isRecord,
  jsonRpcError,
  parseJsonRpcBody,
  type JsonRpcId,
} from '../mcp/json-rpc.ts'
import {describeAmbiguity, unambiguousJsonText} from '../mcp/strict-json.ts'
import type {
  InterceptDecision,
  InterceptedRequest,
  LocalAnswer,
  RequestInterceptor,
} from '../proxy/types.ts'
import {AnnotationCache} from './annotation-cache.ts'
import {Authorizer, type AuthorizerOptions} from './authorizer.ts'
import type {PrincipalPart, ToolAnnotations} from './entity-model.ts'
import {filterListResult} from './list-filter.ts'
import {
  listResponseTransform,
  streamResponseTransform,
  type ResponseHeaders,
  type ResultFilter,
} from './list-response.ts'
import type {ListKind} from './method-table.ts'
import {planRequest} from './request-plan.ts'
import type {AuthzConfig} from './policy-file.ts'

const JSON_HEADERS = {'content-type': 'application/json', 'x-content-type-options': 'nosniff'}

/** Contract §6: `{"jsonrpc":"2.0","id":<id>,"error":{"code":403,"message":"Unauthorized"}}`. */
export function forbiddenAnswer(id: JsonRpcId | undefined): LocalAnswer {
  return {status: 403, headers: {...JSON_HEADERS}, body: jsonRpcError(id, 403, 'Unauthorized')}
}

function badRequest(code: number, message: string): LocalAnswer {
  return {status: 400, headers: {...JSON_HEADERS}, body: jsonRpcError(undefined, code, message)}
}

// Methods that carry no JSON-RPC message: opening the standalone SSE stream (GET), ending a
// session (DELETE), CORS preflight. They name no tool, prompt or resource.
const BODYLESS_METHODS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS'])

// Headers that ask some frameworks to treat a request as another method (a GET that runs as a
// POST, a POST that runs as a DELETE): the method judged here would not be the one executed.
const METHOD_OVERRIDES = ['x-http-method-override', 'x-method-override', 'x-http-method']

export interface AuthzInterceptorOptions extends AuthorizerOptions {
  annotations?: AnnotationCache
}

let internalIds = 0

export class AuthzInterceptor implements RequestInterceptor {
  readonly authorizer: Authorizer
  readonly annotations: AnnotationCache
  readonly #logger: Logger | undefined

  constructor(config: AuthzConfig, options: AuthzInterceptorOptions = {}) {
    this.authorizer = new Authorizer(config, options)
    this.annotations = options.annotations ?? new AnnotationCache()
    this.#logger = options.logger
  }

  async intercept(
    request: InterceptedRequest,
    callUpstream: (jsonRpcBody: unknown) => Promise<unknown>,
  ): Promise<InterceptDecision> {
    const method = request.method.toUpperCase()
    const override = METHOD_OVERRIDES.find((h) => request.headers[h] !== undefined)
    if (override) {
      this.#logger?.info('authz decision', {decision: 'deny', reason: `${override} header`})
      return {
        action: 'answer',
        answer: badRequest(INVALID_REQUEST, `the ${override} header is not allowed`),
      }
    }
    if (BODYLESS_METHODS.has(method) && request.body.length > 0) {
      // A body nobody judges must not reach a server that might read it anyway.
      this.#logger?.info('authz decision', {decision: 'deny', reason: `body on ${method}`})
      return {
        action: 'answer',
        answer: badRequest(INVALID_REQUEST, `a ${method} request must not have a body`),
      }
    }
    if (BODYLESS_METHODS.has(method)) {
      if (method !== 'GET' || !request.principal)
        return request.principal
          ? {action: 'forward'}
          : {action: 'answer', answer: forbiddenAnswer(undefined)}
      const principal = this.#principal(request)
      return {
        action: 'forward',
        rewriteResponse: (_type, headers?: ResponseHeaders) =>
          this.#streamRewriter(principal, headers),
      }
    }
    if (method !== 'POST') return {action: 'answer', answer: forbiddenAnswer(undefined)}

    // Judge exactly what is forwarded: a text two parsers could read differently is refused.
    const text = unambiguousJsonText(request.body)
    if (!('text' in text)) {
      this.#logger?.info('authz decision', {decision: 'deny', reason: text.kind})
      return {action: 'answer', answer: badRequest(INVALID_REQUEST, describeAmbiguity(text))}
    }
    const parsed = parseJsonRpcBody(text.text)
    if (!parsed.ok) {
      // Contract §6: non-JSON POST → 400; batches are refused too (one message, one decision).
      const code = parsed.reason === 'not_json' ? PARSE_ERROR : INVALID_REQUEST
      return {action: 'answer', answer: badRequest(code, parsed.detail)}
    }
    const message = parsed.message
    // A client's answer to a server-initiated request (sampling, elicitation, roots) names no method.
    if (message.kind === 'response') return {action: 'forward'}
    const id = message.kind === 'request' ? message.id : undefined
    if (!request.principal) {
      this.#logger?.info('authz decision', {
        decision: 'deny',
        reason: 'no authenticated principal',
        method: message.method,
      })
      return {action: 'answer', answer: forbiddenAnswer(id)}
    }
    const plan = planRequest(message.method, message.params)
    if (plan.kind === 'allow') return {action: 'forward'}
    if (plan.kind === 'deny' && plan.reason !== 'method not allowed') {
      this.#logger?.info('authz decision', {
        method: message.method,
        decision: 'deny',
        reason: plan.reason,
      })
      return {
        action: 'answer',
        answer: forbiddenAnswer(id),
        audit: {decision: 'deny', reason: plan.reason},
      }
    }
    const principal = this.#principal(request)
    if (plan.kind === 'deny') {
      this.#logger?.info('authz decision', {
        principal: `Client::${JSON.stringify(principal.uid.id)}`,
        method: message.method,
        decision: 'deny',
        reason: plan.reason,
      })
      return {
        action: 'answer',
        answer: forbiddenAnswer(id),
        audit: {decision: 'deny', reason: plan.reason},
      }
    }
    if (plan.kind === 'list') {
      if (id === undefined) return {action: 'forward'} // a notification gets no answer to filter
      return {
        action: 'forward',
        rewriteResponse: (type, headers?: ResponseHeaders) =>
          this.#listRewriter(type, headers, id, plan.list, principal, message.method),
      }
    }
    let annotations: ToolAnnotations | undefined
    if (plan.spec.action === 'call_tool')
      annotations = await this.#annotations(plan.spec.id, callUpstream)
    const decision = this.authorizer.decide(principal, {...plan.spec, annotations})
    const audit = {
      decision: decision.allowed ? 'allow' : 'deny',
      policies: decision.policies,
    } as const
    return decision.allowed
      ? {action: 'forward', audit}
      : {action: 'answer', answer: forbiddenAnswer(id), audit}
  }

  #principal(request: InterceptedRequest): PrincipalPart {
    const p = request.principal
    if (!p) throw new Error('unreachable: principal checked by caller')
    return this.authorizer.principal(p.subject, p.claims)
  }

  async #annotations(
    tool: string,
    callUpstream: (body: unknown) => Promise<unknown>,
  ): Promise<ToolAnnotations | undefined> {
    try {
      return await this.annotations.get(tool, (cursor) =>
        callUpstream({
          jsonrpc: '2.0',
          id: `toolgate-authz-${++internalIds}`,
          method: 'tools/list',
          params: cursor === undefined ? {} : {cursor},
        }),
      )
    } catch (err) {
      // Without annotations a guarded policy does not apply: the safe direction.
      this.#logger?.warn('authz could not list upstream tools for annotations', {
        error: err instanceof Error ? err.message : String(err),
      })
      return undefined
    }
  }

  #filter(principal: PrincipalPart, learn: boolean): ResultFilter {
    return (kind: ListKind, result: unknown) => {
      const outcome = filterListResult(this.authorizer, principal, kind, result)
      if (learn && kind === 'tools' && isRecord(result) && Array.isArray(result.tools)) {
        this.annotations.learn(result.tools, false)
      }
      this.#logger?.debug('authz list filtered', {
        principal: `Client::${JSON.stringify(principal.uid.id)}`,
        list: kind,
        kept: outcome.kept,
        total: outcome.total,
      })
      return outcome.result
    }
  }

  // `headers` is optional: the proxy seam (ResponseRewriter) passes the content type, and the
  // response headers once it hands them over; a coded body is refused either way, since a
  // compressed body is not UTF-8 text.
  #listRewriter(
    contentType: string | undefined,
    headers: ResponseHeaders | undefined,
    id: JsonRpcId,
    kind: ListKind,
    principal: PrincipalPart,
    method: string,
  ) {
    return listResponseTransform(contentType, id, kind, this.#filter(principal, true), {
      headers,
      onRefused: (reason) => this.#refused(principal, method, reason),
    })
  }

  // A GET stream is read as SSE by MCP clients whatever its content type, so it is always mapped.
  #streamRewriter(principal: PrincipalPart, headers: ResponseHeaders | undefined) {
    return streamResponseTransform(this.#filter(principal, true), {
      headers,
      onRefused: (reason) => this.#refused(principal, 'GET stream', reason),
    })
  }

  #refused(principal: PrincipalPart, method: string, reason: string): void {
    this.#logger?.warn('authz refused an upstream list response', {
      principal: `Client::${JSON.stringify(principal.uid.id)}`,
      method,
      reason,
    })
  }
}
