import type {IncomingMessage, ServerResponse} from 'node:http'
import {performance} from 'node:perf_hooks'
import {isToolgateError} from '../errors.ts'
import type {Logger} from '../log/logger.ts'
import type {ServeMetrics} from '../metrics/serve-metrics.ts'
import {createRegistryResponder} from '../registry-api/handler.ts'
import {matchRegistryPath, type RegistryRoute} from '../registry-api/paths.ts'
import type {RegistryStore} from '../registry/types.ts'
import type {Principal} from '../auth/types.ts'
import type {RegistryPolicy} from '../registry-authz/registry-policy.ts'
import type {AuthGate} from './auth-gate.ts'
import type {Auditor} from '../audit/auditor.ts'
import {hasDotSegment} from './dot-segments.ts'
import {hextets} from '../http/ip-ranges.ts'
import {matchWritePath, methodOf, type WriteRoute} from '../registry-publish/paths.ts'
import type {Publisher, WriteFacts} from '../registry-publish/publisher.ts'
import {answerWrite} from './write-handler.ts'
import type {RateLimiter} from './rate-limit.ts'
import {isReadMethod, sendErrorBody, sendMethodNotAllowed, sendText} from './respond.ts'

/**
 * The main port's request handler (contract §1): `/openapi.json` and `/.well-known/*` are public,
 * everything else passes the auth gate (oauth mode) before routing, so an unauthenticated client
 * learns nothing about which paths exist. A path with a `.` or `..` segment is a 400 before all that. Errors become `{"error": …}`; anything unexpected is a
 * 500 `internal server error` with the detail only in the log.
 */
export interface MainHandlerOptions {
  store: RegistryStore
  logger: Logger
  metrics: ServeMetrics
  openApiJson: string
  /** Metadata JSON in oauth mode; undefined in anonymous mode (→ 404). */
  protectedResourceJson: string | undefined
  /** Undefined in anonymous mode. */
  gate: AuthGate | undefined
  /** Budget of the registry response cache in bytes (0 turns it off). */
  responseCacheBytes?: number
  /** The registry policy in force (`auth.authz`), read per request so a reload takes effect. */
  policy?: (() => RegistryPolicy) | undefined
  /** `serve --audit-log`: registry reads and refused tokens (issue 35). */
  auditor?: Auditor | undefined
  /** Publishing to managed sources (docs/registry-publish.md); absent → write routes are 404. */
  publisher?: Publisher | undefined
  /** `rateLimits`: per-caller buckets for registry reads (optional) and writes. */
  limits?: {read?: RateLimiter | undefined; publish: RateLimiter} | undefined
}

// Routes that are not registry reads nor refusals: not audited (documents, probes, bad paths).
const UNAUDITED = new Set(['openapi', 'protected_resource_metadata', 'well_known', 'bad_path'])

/** What one request learns about its caller and, for a write, what it changed. */
interface Who {
  caller?: Principal | undefined
  write?: WriteFacts
}

/**
 * Whose bucket a request takes from: the token's provider and subject, or without a token the
 * client's address (an IPv4-mapped IPv6 address counts as the IPv4 one). Forwarding headers are
 * not believed: any client can write them.
 */
function callerKey(caller: Principal | undefined, req: IncomingMessage): string {
  if (caller) return `p\0${caller.provider}\0${caller.subject}`
  const address = req.socket.remoteAddress ?? ''
  if (address.startsWith('::ffff:')) return `a\0${address.slice(7)}`
  // One IPv6 host holds a /64 (2^64 addresses): its bucket is the /64's, or it has no limit.
  if (address.includes(':')) return `a\0${hextets(address).slice(0, 4).join(':')}::/64`
  return `a\0${address}`
}

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void

const WELL_KNOWN_PRM = '/.well-known/oauth-protected-resource'

export function createMainHandler(opts: MainHandlerOptions): RequestHandler {
  const {store, logger, metrics, openApiJson, protectedResourceJson, gate} = opts
  const answer = createRegistryResponder(store, {cacheBytes: opts.responseCacheBytes})
  // Fixed bodies are encoded once, not per request.
  const openApiBody = Buffer.from(openApiJson)
  const prmBody =
    protectedResourceJson === undefined ? undefined : Buffer.from(protectedResourceJson)

  const finish = (route: string, res: ServerResponse, start: number) => {
    metrics.observeRequest(route, res.statusCode, (performance.now() - start) / 1000)
  }

  const fail = (res: ServerResponse, err: unknown, req: IncomingMessage) => {
    if (isToolgateError(err) && err.status < 500) {
      sendErrorBody(res, err.status, err.message)
      return
    }
    if (isToolgateError(err, 'ERR_STORAGE_UNAVAILABLE')) {
      // The database is away (restart, failover): a retryable 503, JSON like every other error.
      // Logged at warn without the request: during an outage every request ends here.
      logger.warn('storage unavailable', {error: err.message})
      if (!res.headersSent) sendErrorBody(res, 503, 'storage unavailable', {'retry-after': '2'})
      else res.destroy()
      return
    }
    logger.error('request failed', {
      method: req.method,
      path: (req.url ?? '').split('?', 1)[0],
      err: err as Error,
    })
    if (!res.headersSent) sendErrorBody(res, 500, 'internal server error')
    else res.destroy()
  }

  /** Takes a token from the caller's bucket; answers 429 with Retry-After when there is none. */
  const limited = (
    limiter: RateLimiter | undefined,
    kind: string,
    req: IncomingMessage,
    res: ServerResponse,
    caller: Principal | undefined,
  ): boolean => {
    if (!limiter) return false
    const taken = limiter.take(callerKey(caller, req))
    if (taken.ok) return false
    metrics.rateLimited(kind)
    const after = String(taken.retryAfterSeconds)
    sendErrorBody(res, 429, `rate limit exceeded; retry after ${after} s`, {'retry-after': after})
    return true
  }

  const handle = async (req: IncomingMessage, res: ServerResponse, who: Who): Promise<string> => {
    const url = req.url ?? '/'
    const q = url.indexOf('?')
    const path = q === -1 ? url : url.slice(0, q)
    const query = q === -1 ? '' : url.slice(q + 1)

    // Before the gate, which checks public paths on the normalised path (see dot-segments.ts).
    if (hasDotSegment(path)) {
      sendErrorBody(res, 400, 'path: dot segments are not allowed')
      return 'bad_path'
    }
    if (path === '/openapi.json') {
      if (!isReadMethod(req.method)) sendMethodNotAllowed(res)
      else sendText(res, 200, openApiBody)
      return 'openapi'
    }
    if (path.startsWith('/.well-known/')) {
      // RFC 9728 §3.1: metadata for a resource with a path lives under the suffixed well-known URL.
      const isPrm = path === WELL_KNOWN_PRM || path.startsWith(WELL_KNOWN_PRM + '/')
      if (!isPrm || prmBody === undefined) sendErrorBody(res, 404, 'not found')
      else if (!isReadMethod(req.method)) sendMethodNotAllowed(res)
      else sendText(res, 200, prmBody)
      return isPrm ? 'protected_resource_metadata' : 'well_known'
    }
    // Writes are matched before the gate: they never run as the anonymous caller of a public path.
    let write: WriteRoute | undefined
    let badWrite: unknown
    try {
      write = matchWritePath(path)
    } catch (err) {
      badWrite = err // answered after the gate: the unauthenticated learn nothing of paths
    }
    let caller: Principal | undefined
    if (gate) {
      const checked = await gate.check(req, res, url, write !== undefined || badWrite !== undefined)
      if (checked === false) return 'unauthorized'
      caller = checked ?? undefined
      who.caller = caller
    }

    if (badWrite !== undefined) {
      fail(res, badWrite, req)
      return 'registry_bad_path'
    }
    if (write) {
      who.write = {action: write.kind}
      const method = methodOf(write)
      if (req.method !== method) {
        sendErrorBody(res, 405, 'method not allowed', {allow: method})
        return write.kind
      }
      if (limited(opts.limits?.publish, 'publish', req, res, caller)) return 'rate_limited'
      if (!opts.publisher) sendErrorBody(res, 404, 'not found')
      else {
        try {
          await answerWrite(req, res, write, caller, opts.publisher, who.write)
        } catch (err) {
          // A refusal (403, 409, 413…) is this route's answer, counted under its name.
          fail(res, err, req)
        }
      }
      return write.kind
    }

    let route: RegistryRoute | undefined
    try {
      route = matchRegistryPath(path)
    } catch (err) {
      // A path of the right shape with a bad serverName/version: 400 naming the parameter.
      if (!isReadMethod(req.method)) sendMethodNotAllowed(res)
      else fail(res, err, req)
      return 'registry_bad_path'
    }
    if (!route) {
      sendErrorBody(res, 404, 'not found')
      return 'not_found'
    }
    if (limited(opts.limits?.read, 'read', req, res, caller)) return 'rate_limited'
    if (!isReadMethod(req.method)) sendMethodNotAllowed(res)
    else {
      try {
        const policy = opts.policy?.()
        // Without a token (anonymous mode, a public path) the caller is Client::"anonymous".
        const scoped = policy && {viewer: policy.viewer(caller), generation: policy.generation}
        sendText(res, 200, await answer(route, query, scoped))
      } catch (err) {
        fail(res, err, req)
      }
    }
    return route.kind
  }

  const audit = (
    route: string,
    req: IncomingMessage,
    res: ServerResponse,
    start: number,
    who: Who,
  ) => {
    if (!opts.auditor || UNAUDITED.has(route)) return
    opts.auditor.registry({
      principal: who.caller,
      route,
      path: (req.url ?? '/').split('?', 1)[0]!,
      status: res.statusCode,
      durationMs: Math.round((performance.now() - start) * 10) / 10,
      ...(who.write ? {write: who.write} : {}),
    })
  }

  return (req, res) => {
    const start = performance.now()
    const who: Who = {}
    handle(req, res, who).then(
      (route) => {
        finish(route, res, start)
        audit(route, req, res, start, who)
      },
      (err: unknown) => {
        fail(res, err, req)
        finish('error', res, start)
        audit('error', req, res, start, who)
      },
    )
  }
}
