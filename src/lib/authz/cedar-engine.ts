/**
 * The only module that imports the Cedar WebAssembly build. Keeping one import point lets the
 * single-executable build swap in the `/web` build with `initSync` and an embedded `.wasm` asset
 * (testing.md) by changing this file alone.
 */
import * as cedar from '@cedar-policy/cedar-wasm/nodejs'

export type CedarValue = cedar.CedarValueJson
export type CedarEntity = cedar.EntityJson
export type CedarEntityUid = {type: string; id: string}
export type CedarPolicyJson = cedar.PolicyJson

export interface CedarDecision {
  decision: 'allow' | 'deny'
  /** Ids of the policies that determined the decision. */
  reasons: string[]
  /** Ids (and messages) of policies whose evaluation failed; an erroring policy is skipped by Cedar. */
  errors: {policyId: string; message: string}[]
}

export interface CedarRequest {
  principal: CedarEntityUid
  action: CedarEntityUid
  resource: CedarEntityUid
  context: Record<string, CedarValue>
  entities: CedarEntity[]
}

function firstMessage(errors: cedar.DetailedError[]): string {
  return errors.map((e) => e.message).join('; ') || 'unknown Cedar error'
}

/** Parses one policy statement; returns the parser's message when it does not parse. */
export function checkPolicy(id: string, text: string): string | undefined {
  const answer = cedar.checkParsePolicySet({staticPolicies: {[id]: text}})
  return answer.type === 'success' ? undefined : firstMessage(answer.errors)
}

/** Parses entities (no schema); returns the parser's message when they do not parse. */
export function checkEntities(entities: CedarEntity[]): string | undefined {
  const answer = cedar.checkParseEntities({entities})
  return answer.type === 'success' ? undefined : firstMessage(answer.errors)
}

/** The JSON form (AST) of one policy, for static analysis. */
export function policyToJson(text: string): CedarPolicyJson {
  const answer = cedar.policyToJson(text)
  if (answer.type !== 'success') throw new Error(firstMessage(answer.errors))
  return answer.json
}

/** Parses a policy set once into the engine's thread-local cache under `setId`. */
export function preparsePolicySet(
  setId: string,
  policies: Record<string, string>,
): string | undefined {
  const answer = cedar.preparsePolicySet(setId, {staticPolicies: policies})
  return answer.type === 'success' ? undefined : firstMessage(answer.errors)
}

/**
 * Evaluates a request against a preparsed set. A failed call (bad request data) is reported as a
 * deny with the failure as an error: evaluation problems never allow (spec: evaluation errors deny).
 */
export function authorize(setId: string, request: CedarRequest): CedarDecision {
  let answer: cedar.AuthorizationAnswer
  try {
    answer = cedar.statefulIsAuthorized({...request, preparsedPolicySetId: setId})
  } catch (err) {
    return {decision: 'deny', reasons: [], errors: [{policyId: '', message: String(err)}]}
  }
  if (answer.type !== 'success') {
    return {
      decision: 'deny',
      reasons: [],
      errors: [{policyId: '', message: firstMessage(answer.errors)}],
    }
  }
  const {decision, diagnostics} = answer.response
  return {
    decision,
    reasons: diagnostics.reason,
    errors: diagnostics.errors.map((e) => ({policyId: e.policyId, message: e.error.message})),
  }
}

/**
 * Cedar's own validator (strict mode) over policies in JSON form against a schema in Cedar schema
 * text. Returns each problem with the policy it concerns; a schema that does not parse is one
 * problem with an empty policy id.
 */
export function validatePolicies(
  schema: string,
  policies: Record<string, CedarPolicyJson>,
): {policyId: string; message: string; severity: 'error' | 'warning'}[] {
  const answer = cedar.validate({
    schema,
    policies: {staticPolicies: policies},
    validationSettings: {mode: 'strict'},
  })
  if (answer.type !== 'success')
    return [{policyId: '', message: firstMessage(answer.errors), severity: 'error'}]
  return [
    ...answer.validationErrors.map((e) => ({
      policyId: e.policyId,
      message: e.error.message,
      severity: 'error' as const,
    })),
    ...answer.validationWarnings.map((e) => ({
      policyId: e.policyId,
      message: e.error.message,
      severity: 'warning' as const,
    })),
  ]
}
