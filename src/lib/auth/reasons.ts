/**
 * Stable reason codes for refused tokens. `serve` and `proxy`/`run` append the code to the 401
 * `error_description` of an `invalid_token` answer (`invalid token (reason: aud_mismatch)`) and put
 * it on their log line, so the operator can run `toolgate auth explain` on the token and read the
 * full story (docs/troubleshooting.md). A code names which check failed, never a provider, a key or
 * a claim value: it tells a client no more than "your audience is wrong".
 */
export const REASONS = {
  header_missing: {check: 'header', text: 'no bearer token was sent'},
  header_malformed: {check: 'header', text: 'the Authorization header is not "Bearer <token>"'},
  header_multiple: {check: 'header', text: 'more than one Authorization header'},
  token_too_large: {check: 'size', text: 'the token is longer than 16 KiB'},
  iss_unknown: {check: 'provider', text: 'no provider has an issuerUrl equal to the token iss'},
  opaque_unsupported: {
    check: 'provider',
    text: 'the token is not a JWT and no provider has an introspection endpoint',
  },
  malformed: {check: 'format', text: 'the JWT cannot be decoded'},
  alg_not_allowed: {check: 'alg', text: 'the JWT alg is not an asymmetric algorithm'},
  no_jwks: {check: 'kid', text: 'the provider has no JWKS to verify JWTs with'},
  kid_unknown: {check: 'kid', text: 'no key of the provider JWKS matches the token kid/alg'},
  signature_invalid: {check: 'signature', text: 'the signature does not verify'},
  iss_missing: {check: 'iss', text: 'the token has no iss'},
  iss_mismatch: {check: 'iss', text: 'iss is not byte-equal to the provider issuerUrl'},
  aud_missing: {check: 'aud', text: 'the token has no aud'},
  aud_mismatch: {check: 'aud', text: 'aud does not contain the expected audience'},
  exp_missing: {check: 'exp', text: 'the token has no exp'},
  exp_invalid: {check: 'exp', text: 'exp is not a number'},
  expired: {check: 'exp', text: 'exp is not in the future'},
  nbf_invalid: {check: 'nbf', text: 'nbf is not a number'},
  nbf_future: {check: 'nbf', text: 'nbf is in the future'},
  iat_invalid: {check: 'iat', text: 'iat is not a number'},
  sub_missing: {check: 'sub', text: 'sub is missing or not a non-empty string'},
  inactive: {check: 'introspection', text: 'introspection answered active: false'},
  not_access_token: {
    check: 'introspection',
    text: 'introspection says this is not an access token (token_type)',
  },
  claim_invalid: {check: 'claims', text: 'a claim failed validation'},
  provider_unavailable: {
    check: 'provider',
    text: 'the provider (discovery, JWKS or introspection) could not be reached',
  },
  internal: {check: 'provider', text: 'the validator failed unexpectedly'},
} as const satisfies Record<string, {check: string; text: string}>

export type ReasonCode = keyof typeof REASONS

/** The check a code belongs to (the `id` of a check in `auth explain`). */
export function checkOf(code: ReasonCode): string {
  return REASONS[code].check
}

/**
 * What an `invalid_token` 401 says on the wire: the generic description plus the code. Header
 * problems (`invalid_request`) keep their description alone: it already names the problem.
 */
export function wireDescription(outcome: {
  error: string
  description: string
  reason?: ReasonCode | undefined
}): string {
  return outcome.error === 'invalid_token' && outcome.reason
    ? `${outcome.description} (reason: ${outcome.reason})`
    : outcome.description
}
