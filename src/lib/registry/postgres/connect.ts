import {readFileSync} from 'node:fs'
import postgres, {type Options, type Sql} from 'postgres'
import {ToolgateError} from '../../errors.ts'
import {readSecretFile} from '../../fs/secret-file.ts'

/**
 * Connection settings of the PostgreSQL store (`storage.postgres`, docs/deploy.md), resolved into
 * the `postgres` driver's options. The password comes from `passwordFile`, else the environment
 * (`TOOLGATE_DB_PASSWORD`), else the URL; it is never part of a message or a log line.
 */
export type SslMode = 'disable' | 'prefer' | 'require' | 'verify-ca' | 'verify-full'

export interface PgConnectionConfig {
  url?: string
  host?: string
  port?: number
  database?: string
  user?: string
  passwordFile?: string
  sslmode?: SslMode
  /** PEM file of the CA(s) the server certificate must chain to (verify-ca, verify-full). */
  sslRootCert?: string
  /** Connections in the pool (default 10). */
  poolSize?: number
  /** Server-side bound on every statement (default 30 s); a slow database answers 503, not never. */
  statementTimeoutMs?: number
  /** Bound on establishing a connection (default 5 s). */
  connectTimeoutMs?: number
}

export const PASSWORD_ENV = 'TOOLGATE_DB_PASSWORD'
export const DEFAULT_POOL_SIZE = 10
export const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000
export const DEFAULT_CONNECT_TIMEOUT_MS = 5000

/**
 * Delay before a pooled connection retries after `failures` failed connections (the pool's count,
 * at least 1 here), in seconds (the driver's unit): 25–50 ms after the first, doubling to at most
 * 1 s, with jitter. The driver's default grows to 20 s, and a query handed to a connection that
 * waits out that delay waits with it: during an outage, requests took 15 s to get their 503, and
 * serving resumed up to 20 s after the database was back. A failed attempt is cheap for the
 * server (refused at once, or bounded by connectTimeout), and there are at most poolSize of them
 * a second.
 */
export function reconnectDelaySeconds(failures: number): number {
  return Math.min(0.025 * 2 ** failures, 1) * (0.5 + Math.random() / 2)
}

/**
 * The longest a read waits for the database in all: opening a connection, then the statement,
 * then a second for the server's own statement timeout to answer first. A database behind a silent
 * network (a partition, a dead host) sends no error at all, and TCP would wait many minutes.
 */
export function readDeadlineMs(config: PgConnectionConfig): number {
  return (
    (config.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS) +
    (config.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS) +
    1000
  )
}

/** The password by precedence: file, environment, none (the URL's own, if any, applies). */
export function resolvePassword(
  config: PgConnectionConfig,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  if (config.passwordFile !== undefined)
    return readSecretFile(config.passwordFile, {what: 'storage.postgres.passwordFile'})
  const fromEnv = env[PASSWORD_ENV]
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : undefined
}

function sslOption(config: PgConnectionConfig): Options<never>['ssl'] {
  const mode = config.sslmode
  if (mode === undefined) return undefined
  if (mode === 'disable') return false
  if (mode === 'prefer' || mode === 'require') return mode
  let ca: string | undefined
  if (config.sslRootCert !== undefined) {
    try {
      ca = readFileSync(config.sslRootCert, 'utf8')
    } catch (err) {
      throw new ToolgateError(
        'ERR_FILE_UNREADABLE',
        `storage.postgres.sslRootCert: cannot read ${config.sslRootCert}`,
        {cause: err},
      )
    }
  }
  // verify-ca checks the chain only; verify-full also the host name (libpq's meanings).
  return mode === 'verify-full'
    ? {rejectUnauthorized: true, ...(ca ? {ca} : {})}
    : {rejectUnauthorized: true, ...(ca ? {ca} : {}), checkServerIdentity: () => undefined}
}

/** A pool for `config`. Connections open lazily, so this never fails on an unreachable server. */
export function createPool(config: PgConnectionConfig, env: NodeJS.ProcessEnv = process.env): Sql {
  const password = resolvePassword(config, env)
  const ssl = sslOption(config)
  const options: Options<Record<string, never>> = {
    max: config.poolSize ?? DEFAULT_POOL_SIZE,
    connect_timeout: Math.ceil((config.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS) / 1000),
    idle_timeout: 60,
    backoff: reconnectDelaySeconds,
    onnotice: () => undefined,
    connection: {
      application_name: 'toolgate',
      statement_timeout: config.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS,
    },
    // int8 (counts, ids, ms timestamps) as JS numbers: every value we store is below 2^53.
    types: {
      bigint: {
        to: 20,
        from: [20],
        serialize: (x: number) => String(x),
        parse: (x: string) => Number(x),
      },
    } as unknown as Options<Record<string, never>>['types'],
    ...(config.host !== undefined ? {host: config.host} : {}),
    ...(config.port !== undefined ? {port: config.port} : {}),
    ...(config.database !== undefined ? {database: config.database} : {}),
    ...(config.user !== undefined ? {username: config.user} : {}),
    ...(password !== undefined ? {password} : {}),
    ...(ssl !== undefined ? {ssl} : {}),
  }
  return config.url !== undefined ? postgres(config.url, options) : postgres(options)
}

// SQLSTATE classes meaning "the database is not there right now" (PostgreSQL appendix A):
// 08 connection exception, 53 insufficient resources, 57P01-57P05 shutdown / cannot connect now,
// 57014 statement timeout (a database too slow to answer), 40001/40P01 serialization/deadlock.
const UNAVAILABLE_STATES = /^(08|53|57P0|57014|40001|40P01)/
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
])

/** Whether a driver error means "unavailable, try again" rather than a bug or a bad setup. */
export function isUnavailable(err: unknown): boolean {
  const code = (err as {code?: unknown} | undefined)?.code
  if (typeof code !== 'string') {
    // AggregateError (several addresses refused) carries the code on its members.
    const inner = (err as {errors?: unknown[]} | undefined)?.errors
    return Array.isArray(inner) && inner.length > 0 && inner.every(isUnavailable)
  }
  return UNAVAILABLE_CODES.has(code) || UNAVAILABLE_STATES.test(code)
}

/**
 * A driver error as a ToolgateError: ERR_STORAGE_UNAVAILABLE (503, retried) when the database is
 * unreachable, else ERR_STORAGE. The message names the SQLSTATE or socket code only: server
 * messages can quote data, and connection errors can carry the connection string.
 */
export function storageError(err: unknown, doing: string): ToolgateError {
  if (err instanceof ToolgateError) return err
  const code = (err as {code?: unknown} | undefined)?.code
  const tag = typeof code === 'string' ? ` (${code})` : ''
  if (isUnavailable(err)) {
    return new ToolgateError(
      'ERR_STORAGE_UNAVAILABLE',
      `storage: the database is unavailable${tag}`,
      {
        cause: err,
      },
    )
  }
  const detail = (err as {message?: unknown} | undefined)?.message
  const pgMessage =
    typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? `: ${String(detail)}` : ''
  return new ToolgateError('ERR_STORAGE', `storage: ${doing} failed${tag}${pgMessage}`, {
    cause: err,
  })
}
