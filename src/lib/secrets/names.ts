import {ToolgateError} from '../errors.ts'

/**
 * Secret names. User names are short identifiers; names starting with RESERVED_PREFIX belong to
 * toolgate itself (OAuth tokens, client registrations): hidden from `list`, refused by `set`/`get`/
 * `delete` unless the caller asks for the system namespace. A user name can never start with `_`,
 * so the two namespaces cannot collide.
 */
export const RESERVED_PREFIX = '__toolgate/'

export const MAX_NAME_LENGTH = 128
const MAX_SYSTEM_NAME_LENGTH = 512
/** Values are stored in memory and in one file; anything larger is a mistake (e.g. a piped binary). */
export const MAX_VALUE_BYTES = 64 * 1024

const USER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/
// encodeURIComponent output plus `/` as the separator, so systemSecretName() output always passes.
const SYSTEM_NAME = /^__toolgate\/[A-Za-z0-9._~!*'()%/-]+$/

export function isReservedName(name: string): boolean {
  return name.startsWith(RESERVED_PREFIX)
}

/** Builds a reserved name from free-form parts (issuer URLs, server names), e.g. `oauth`, `github`. */
export function systemSecretName(...parts: string[]): string {
  if (parts.length === 0 || parts.some((p) => p === '')) {
    throw new ToolgateError('ERR_USAGE', 'a system secret name needs non-empty parts')
  }
  return RESERVED_PREFIX + parts.map((p) => encodeURIComponent(p)).join('/')
}

/** Throws ERR_USAGE (bad shape) or ERR_SECRET_RESERVED (system name without `system`). */
export function validateSecretName(name: string, options: {system?: boolean} = {}): void {
  if (typeof name !== 'string' || name === '') {
    throw new ToolgateError('ERR_USAGE', 'secret name is empty')
  }
  if (isReservedName(name)) {
    if (!options.system) {
      throw new ToolgateError(
        'ERR_SECRET_RESERVED',
        `secret name "${printable(name)}" is in the reserved namespace "${RESERVED_PREFIX}" (toolgate's own state); use --system to manage it`,
      )
    }
    if (name.length > MAX_SYSTEM_NAME_LENGTH || !SYSTEM_NAME.test(name)) {
      throw new ToolgateError('ERR_USAGE', `invalid system secret name "${printable(name)}"`)
    }
    return
  }
  if (name.length > MAX_NAME_LENGTH) {
    throw new ToolgateError(
      'ERR_USAGE',
      `secret name is ${name.length} characters long; the limit is ${MAX_NAME_LENGTH}`,
    )
  }
  if (!USER_NAME.test(name)) {
    throw new ToolgateError(
      'ERR_USAGE',
      `invalid secret name "${printable(name)}": use letters, digits, '.', '_' and '-', starting with a letter or digit`,
    )
  }
}

export function validateSecretValue(value: string): void {
  if (typeof value !== 'string' || value === '') {
    throw new ToolgateError('ERR_USAGE', 'secret value is empty')
  }
  if (Buffer.byteLength(value, 'utf8') > MAX_VALUE_BYTES) {
    throw new ToolgateError('ERR_USAGE', `secret value is larger than ${MAX_VALUE_BYTES} bytes`)
  }
}

/**
 * The `environment` provider's variable for a name: `TOOLGATE_SECRET_` + the name upper-cased with
 * every character outside A–Z and 0–9 replaced by `_` (`github-token` → `TOOLGATE_SECRET_GITHUB_TOKEN`).
 */
export const ENV_SECRET_PREFIX = 'TOOLGATE_SECRET_'

export function environmentVariableFor(name: string): string {
  return ENV_SECRET_PREFIX + name.toUpperCase().replace(/[^A-Z0-9]/g, '_')
}

// Names echoed in errors are user input; keep control characters out of terminals and logs.
function printable(name: string): string {
  const clipped = name.length > 80 ? name.slice(0, 80) + '…' : name
  return [...clipped].map((c) => (isControl(c) ? '?' : c)).join('')
}

/** C0 controls and DEL (RFC 9110 §5.5 forbids them in field values, except HTAB). */
export function isControl(ch: string): boolean {
  const code = ch.charCodeAt(0)
  return code < 0x20 || code === 0x7f
}
