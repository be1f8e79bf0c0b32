import {ToolgateError} from '../errors.ts'

/**
 * `--provider-args '<json>'` checked against the provider's own table before anything starts: not a
 * JSON object, an unknown key, a value of the wrong type or a missing required key is an error that
 * names the key (contract §4).
 */
export type ArgType = 'string' | 'boolean' | 'integer'

export interface ArgSpec {
  type: ArgType
  required?: boolean
  /** Extra check; returns a problem description or undefined. */
  check?: (value: unknown) => string | undefined
}

export function parseProviderArgs(
  provider: string,
  text: string,
  spec: Record<string, ArgSpec>,
): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new ToolgateError(
      'ERR_USAGE',
      `--provider-args: not JSON (expected an object such as '{"host":"example.com"}')`,
    )
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ToolgateError('ERR_USAGE', '--provider-args: must be a JSON object')
  }
  const args = value as Record<string, unknown>
  const known = Object.keys(spec)
  for (const [key, v] of Object.entries(args)) {
    const s = spec[key]
    if (!s) {
      throw new ToolgateError(
        'ERR_USAGE',
        `--provider-args: unknown key "${key.slice(0, 60)}" for provider ${provider} (known: ${known.join(', ')})`,
      )
    }
    const ok =
      s.type === 'integer'
        ? Number.isInteger(v)
        : s.type === 'boolean'
          ? typeof v === 'boolean'
          : typeof v === 'string'
    if (!ok)
      throw new ToolgateError(
        'ERR_USAGE',
        `--provider-args: "${key}" must be ${s.type === 'integer' ? 'an integer' : `a ${s.type}`}`,
      )
    const problem = s.check?.(v)
    if (problem) throw new ToolgateError('ERR_USAGE', `--provider-args: "${key}" ${problem}`)
  }
  for (const [key, s] of Object.entries(spec)) {
    if (s.required && args[key] === undefined) {
      throw new ToolgateError(
        'ERR_USAGE',
        `--provider-args: "${key}" is required for provider ${provider}`,
      )
    }
  }
  return args
}

export const port = (min: number) => (v: unknown) =>
  (v as number) < min || (v as number) > 65535 ? `must be a port number (${min}-65535)` : undefined

/** Refuses values that would become ssh options or break the command line. */
export const plain = (v: unknown) => {
  const text = v as string
  const bad = text.startsWith('-') || [...text].some((c) => c.charCodeAt(0) <= 0x20 || c === '\x7f')
  return bad ? 'must not start with "-" or contain spaces or control characters' : undefined
}
