/**
 * A small structured logger. The library never prints on its own (contract §0): it writes to the
 * sink it is given, stderr by default, so that `proxy stdio` keeps stdout for the protocol.
 *
 * Lines are `time level msg key=value …` for people, or one JSON object per line with `json: true`.
 * Field values are passed through `redact` so a token or secret that slips into a field is masked.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error'

const LEVELS: Record<LogLevel, number> = {debug: 10, info: 20, warn: 30, error: 40}

export type LogFields = Record<string, unknown>

export interface Logger {
  debug(msg: string, fields?: LogFields): void
  info(msg: string, fields?: LogFields): void
  warn(msg: string, fields?: LogFields): void
  error(msg: string, fields?: LogFields): void
  child(fields: LogFields): Logger
  readonly level: LogLevel
}

export interface LoggerOptions {
  level?: LogLevel
  json?: boolean
  write?: (line: string) => void
  now?: () => Date
  base?: LogFields
}

// Field names whose values are always masked, whatever they hold.
const SECRET_KEYS =
  /^(authorization|token|access_token|refresh_token|id_token|secret|client_secret|password|cookie|set-cookie|subject_token|value)$/i
// A JWT (three base64url segments) or a bearer credential anywhere in a string value.
const JWT_LIKE = /\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*/g
const BEARER_LIKE = /\b(Bearer|Basic)\s+[^\s"',]+/gi

export function redact(key: string, value: unknown): unknown {
  if (SECRET_KEYS.test(key)) return value === undefined ? undefined : '[redacted]'
  if (typeof value === 'string')
    return value.replace(JWT_LIKE, '[redacted-jwt]').replace(BEARER_LIKE, '$1 [redacted]')
  return value
}

function formatValue(value: unknown): string {
  if (value instanceof Error) return JSON.stringify(value.message)
  if (typeof value === 'string')
    return /^[\w.:/@+-]*$/.test(value) && value !== '' ? value : JSON.stringify(value)
  return JSON.stringify(value) ?? String(value)
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? 'info'
  const write = options.write ?? ((line: string) => process.stderr.write(line + '\n'))
  const now = options.now ?? (() => new Date())
  const base = options.base ?? {}

  const emit = (lvl: LogLevel, msg: string, fields?: LogFields) => {
    if (LEVELS[lvl] < LEVELS[level]) return
    const all: LogFields = {...base, ...fields}
    const clean: LogFields = {}
    for (const [k, v] of Object.entries(all)) {
      if (v === undefined) continue
      clean[k] = v instanceof Error ? v.message : redact(k, v)
    }
    const safeMsg = redact('msg', msg) as string
    if (options.json) {
      // Every JSON line names its event (contract §0); a log line is the event `log` unless its
      // fields name another.
      write(
        JSON.stringify({
          time: now().toISOString(),
          level: lvl,
          event: 'log',
          msg: safeMsg,
          ...clean,
        }),
      )
    } else {
      const kv = Object.entries(clean)
        .map(([k, v]) => `${k}=${formatValue(v)}`)
        .join(' ')
      write(`${now().toISOString()} ${lvl.toUpperCase().padEnd(5)} ${safeMsg}${kv ? ' ' + kv : ''}`)
    }
  }

  return {
    level,
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger({...options, base: {...base, ...fields}}),
  }
}

/** A logger that records lines in memory; for tests that assert what was (not) logged. */
export function createMemoryLogger(level: LogLevel = 'debug'): Logger & {lines: string[]} {
  const lines: string[] = []
  const logger = createLogger({level, write: (l) => lines.push(l)})
  return Object.assign(logger, {lines})
}
