import type {IncomingMessage} from 'node:http'
import type {Principal} from '../auth/types.ts'
import {buildCredentials, type CredentialSources} from './credentials.ts'
import {callJsonRpc} from './mcp-call.ts'
import type {InterceptDecision, RequestInterceptor} from './types.ts'
import type {Upstream} from './upstream.ts'
import {encodePrincipalField, PRINCIPAL_FIELD, principalKey} from '../sessions/principal-key.ts'

/** Session fields the interceptor's own upstream calls carry, so the target answers in the client's session. */
const SESSION_FIELDS = ['mcp-session-id', 'mcp-protocol-version']

export type InterceptStep = (
  req: IncomingMessage,
  principal: Principal | undefined,
  body: Buffer | undefined,
  /** The request fields bound for the target (client Authorization included when no outgoing auth is configured). */
  targetHeaders: Readonly<Record<string, string | string[]>>,
) => Promise<InterceptDecision>

/**
 * Step 4 of the pipeline: the interceptor (Cedar authorization) sees the whole body and the
 * principal, and may call the target itself (e.g. `tools/list` for annotations the client cannot
 * spoof) with the credentials a forwarded request would carry.
 */
export function createInterceptStep(
  interceptor: RequestInterceptor,
  deps: {
    upstream: Upstream
    credentials: CredentialSources
    outgoingAuth: boolean
    /** The target is `run`'s bridge: name the principal as forwarded requests do. */
    principalField: boolean
  },
): InterceptStep {
  const {upstream, credentials, outgoingAuth} = deps
  return (req, principal, body, targetHeaders) => {
    const rawUrl = req.url ?? '/'
    return interceptor.intercept(
      {
        method: req.method ?? 'GET',
        path: rawUrl,
        headers: req.headers,
        body: body ?? Buffer.alloc(0),
        principal,
      },
      async (jsonRpcBody) => {
        const headers: Record<string, string> = {}
        for (const name of SESSION_FIELDS) {
          const v = req.headers[name]
          if (typeof v === 'string') headers[name] = v
        }
        // Without outgoing auth the target sees the client's own Authorization on forwarded
        // requests; it must see it on this call too, or a target that checks it answers 401.
        if (!outgoingAuth && typeof targetHeaders.authorization === 'string')
          headers.authorization = targetHeaders.authorization
        if (deps.principalField)
          headers[PRINCIPAL_FIELD] = encodePrincipalField(principalKey(principal))
        const creds = await buildCredentials(credentials, req.headers.authorization)
        return callJsonRpc({
          dispatcher: upstream.dispatcher,
          origin: upstream.target.origin,
          path: upstream.pathFor(rawUrl),
          headers: {...headers, ...creds.headers},
          body: jsonRpcBody,
        })
      },
    )
  }
}
