import type {IncomingMessage, ServerResponse} from 'node:http'
import {authorizationOf} from '../auth/bearer-header.ts'
import {wireDescription} from '../auth/reasons.ts'
import type {BearerAuthenticator, Principal} from '../auth/types.ts'
import type {Logger} from '../log/logger.ts'
import {answer, answerTooLarge} from './answer.ts'
import {bodyTooLarge} from './body-limit.ts'
import {unauthorizedAnswer, type IncomingOidcOptions} from './incoming-auth.ts'
import {ORIGIN_REJECTED_BODY, type OriginPolicy} from './origin.ts'

export interface AdmissionDeps {
  limit: number
  /** Read per request: the loopback default list is only known once the port is bound. */
  originPolicy(): OriginPolicy
  authenticator: BearerAuthenticator | undefined
  oidc: IncomingOidcOptions | undefined
  resourceUrl: string | undefined
  log: Logger
}

export type Admission =
  | {ok: true; principal: Principal | undefined}
  /** The client has its answer; `reason` is for the log and the audit trail. */
  | {ok: false; reason: string}

/** What is decided before the body is read: `ok: false` means the client has its answer. */
export type Admit = (
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
) => Admission | Promise<Admission>

const NO_PRINCIPAL: Admission = {ok: true, principal: undefined}

/**
 * Steps 1–3 of the pipeline (contract §3), outermost first: a declared body over the limit (413
 * before anything is read or forwarded), the Origin check (DNS-rebinding defence, 403), incoming
 * authentication (401 with the RFC 6750 challenge). Nothing reaches the target when one refuses.
 */
export function createAdmission(deps: AdmissionDeps): Admit {
  const {limit, authenticator, log} = deps
  return (req, res, path) => {
    const declared = req.headers['content-length']
    if (declared !== undefined && Number(declared) > limit) {
      log.info('request refused', {reason: 'body too large', path})
      answerTooLarge(res, bodyTooLarge(limit).message)
      return {ok: false, reason: 'body too large'}
    }
    const origins = req.headers.origin === undefined ? undefined : req.headersDistinct.origin
    const decision = deps.originPolicy().check(origins)
    if (!decision.ok) {
      log.info('request refused', {reason: decision.reason, path})
      answer(res, 403, ORIGIN_REJECTED_BODY)
      return {ok: false, reason: decision.reason}
    }
    if (!authenticator) return NO_PRINCIPAL
    const auth = authorizationOf(req)
    return authenticator
      .authenticate(auth && auth.length === 1 ? auth[0] : auth)
      .then((outcome): Admission => {
        if (outcome.ok) return {ok: true, principal: outcome.principal}
        log.info('request refused', {reason: outcome.error, code: outcome.reason, path})
        const a = unauthorizedAnswer(
          deps.oidc!,
          deps.resourceUrl,
          outcome.error,
          wireDescription(outcome),
        )
        answer(res, 401, a.body, a.headers)
        return {
          ok: false,
          reason: `${outcome.error}${outcome.reason ? ` (${outcome.reason})` : ''}`,
        }
      })
  }
}
