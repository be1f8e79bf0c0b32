/**
 * One table of stable error codes (contract §0). Each code maps to an HTTP status and a CLI exit
 * code; conversion happens only at the edges (HTTP handler, command `catch`). Tests assert on `code`.
 *
 * Exit codes are few and documented (docs/exit-codes.md), so CI shells can branch on them:
 * 0 ok, 1 refused or a failed check/lookup, 2 usage or missing input (as oclif's own parse errors),
 * 69 upstream or service unavailable, 70 internal, 77 permission/authentication, 78 configuration.
 */
export const ERROR_CODES = {
  // configuration and usage
  ERR_USAGE: {status: 400, exit: 2},
  ERR_CONFIG_INVALID: {status: 500, exit: 78},
  ERR_CONFIG_NOT_FOUND: {status: 500, exit: 78},
  ERR_FILE_UNREADABLE: {status: 500, exit: 78},
  ERR_ADDRESS_IN_USE: {status: 500, exit: 69},
  // registry API
  ERR_BAD_PARAMETER: {status: 400, exit: 2},
  ERR_REGISTRY_NOT_FOUND: {status: 404, exit: 1},
  ERR_NOT_FOUND: {status: 404, exit: 1},
  // a workload with that name is alive, or one that is running cannot be removed
  ERR_CONFLICT: {status: 409, exit: 1},
  ERR_SOURCE_LOAD: {status: 502, exit: 78},
  ERR_STORAGE: {status: 500, exit: 70},
  // the database does not answer (PostgreSQL down or unreachable): retry later
  ERR_STORAGE_UNAVAILABLE: {status: 503, exit: 69},
  // authentication and authorization
  ERR_AUTH_INVALID_REQUEST: {status: 401, exit: 77},
  ERR_AUTH_INVALID_TOKEN: {status: 401, exit: 77},
  ERR_AUTH_PROVIDER_UNREACHABLE: {status: 401, exit: 69},
  ERR_OUTBOUND_BLOCKED: {status: 502, exit: 69},
  ERR_OUTBOUND_TIMEOUT: {status: 504, exit: 69},
  ERR_OUTBOUND_FAILED: {status: 502, exit: 69},
  ERR_FORBIDDEN: {status: 403, exit: 77},
  // a state or log path others could write or redirect (a symlink, a group/world-writable dir)
  ERR_UNSAFE_PATH: {status: 500, exit: 77},
  ERR_POLICY_INVALID: {status: 500, exit: 78},
  // proxy
  ERR_BODY_TOO_LARGE: {status: 413, exit: 2},
  ERR_UNSUPPORTED_MEDIA_TYPE: {status: 415, exit: 2},
  ERR_RATE_LIMITED: {status: 429, exit: 69},
  ERR_ORIGIN_NOT_ALLOWED: {status: 403, exit: 77},
  ERR_TOKEN_EXCHANGE: {status: 401, exit: 77},
  ERR_UPSTREAM: {status: 502, exit: 69},
  // --sandbox asked for and the sandbox tool (bwrap, sandbox-exec) is missing or unsupported here
  ERR_SANDBOX_UNAVAILABLE: {status: 500, exit: 69},
  ERR_NO_UPSTREAM_TOKEN: {status: 503, exit: 69},
  // remote OAuth
  ERR_OAUTH_FLOW: {status: 502, exit: 77},
  ERR_OAUTH_TIMEOUT: {status: 504, exit: 69},
  ERR_OAUTH_DENIED: {status: 401, exit: 77},
  // a person would have to act (log in, type a password) and this run is non-interactive
  ERR_INPUT_REQUIRED: {status: 503, exit: 2},
  // secrets
  ERR_SECRET_NOT_FOUND: {status: 404, exit: 1},
  ERR_SECRET_READ_ONLY: {status: 500, exit: 77},
  ERR_SECRET_RESERVED: {status: 400, exit: 2},
  ERR_SECRET_CORRUPT: {status: 500, exit: 78},
  ERR_SECRET_LOCKED: {status: 500, exit: 77},
  ERR_KEYRING_UNAVAILABLE: {status: 500, exit: 69},
  ERR_SECRET_BUSY: {status: 503, exit: 69},
  // anything else
  ERR_INTERNAL: {status: 500, exit: 70},
} as const satisfies Record<string, {status: number; exit: number}>

export type ErrorCode = keyof typeof ERROR_CODES

export class ToolgateError extends Error {
  readonly code: ErrorCode
  /** Extra machine-readable facts (never secrets), e.g. the config path of a bad field. */
  readonly details: Record<string, unknown> | undefined

  constructor(
    code: ErrorCode,
    message: string,
    options?: {cause?: unknown; details?: Record<string, unknown>},
  ) {
    super(message, options?.cause === undefined ? undefined : {cause: options.cause})
    this.name = 'ToolgateError'
    this.code = code
    this.details = options?.details
  }

  get status(): number {
    return ERROR_CODES[this.code].status
  }

  get exitCode(): number {
    return ERROR_CODES[this.code].exit
  }
}

export function isToolgateError(err: unknown, code?: ErrorCode): err is ToolgateError {
  return err instanceof ToolgateError && (code === undefined || err.code === code)
}

/** Normalises anything thrown into a ToolgateError; unknown faults become ERR_INTERNAL. */
export function toToolgateError(err: unknown): ToolgateError {
  if (err instanceof ToolgateError) return err
  return new ToolgateError('ERR_INTERNAL', 'internal error', {cause: err})
}
