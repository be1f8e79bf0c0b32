import type {PgConnectionConfig, SslMode} from '../registry/postgres/connect.ts'
import type {Checker} from './checker.ts'
import {checkReadableFile, checkSecretFile} from './config-fields.ts'
import {parseDuration} from './duration.ts'

/**
 * `storage.postgres` (docs/deploy.md): where the database is (`url`, or `host`/`port`/`database`/
 * `user`), the password (`passwordFile`, else env TOOLGATE_DB_PASSWORD, else the URL), TLS
 * (`sslmode`, `sslRootCert`), the pool (`poolSize`), time bounds (`statementTimeout`,
 * `connectTimeout`) and the sync lease of coordinated syncs (`syncLease`).
 */
export type PostgresStorage = {kind: 'postgres'; syncLeaseMs?: number} & PgConnectionConfig

const SSL_MODES: readonly SslMode[] = ['disable', 'prefer', 'require', 'verify-ca', 'verify-full']
const KEYS = [
  'url',
  'host',
  'port',
  'database',
  'user',
  'passwordFile',
  'sslmode',
  'sslRootCert',
  'poolSize',
  'statementTimeout',
  'connectTimeout',
  'syncLease',
] as const

export function checkPostgres(
  c: Checker,
  value: unknown,
  baseDir: string,
): PostgresStorage | undefined {
  const pg = c.object(value, 'storage.postgres', KEYS)
  if (!pg) return undefined
  const at = (key: string) => `storage.postgres.${key}`
  const url = c.string(pg.url, at('url'))
  if (url !== undefined) {
    if (!/^postgres(ql)?:\/\//.test(url))
      c.add(at('url'), 'must start with postgres:// or postgresql://')
    // A password in the URL would end up in the config file, in `ps` of a shell and in backups.
    else if (/^postgres(ql)?:\/\/[^/@]*:[^/@]*@/.test(url))
      c.add(at('url'), 'must not contain a password: use passwordFile or TOOLGATE_DB_PASSWORD')
  }
  const host = c.string(pg.host, at('host'))
  const database = c.string(pg.database, at('database'))
  const user = c.string(pg.user, at('user'))
  const passwordFile = checkReadableFile(c, pg.passwordFile, at('passwordFile'), baseDir)
  if (passwordFile !== undefined)
    checkSecretFile(c, passwordFile, at('passwordFile'), at('passwordFile'))
  const port = integer(c, pg.port, at('port'), 1, 65535)
  const sslmode = c.string(pg.sslmode, at('sslmode'))
  if (sslmode !== undefined && !SSL_MODES.includes(sslmode as SslMode))
    c.add(at('sslmode'), `must be one of ${SSL_MODES.join(', ')}`)
  const sslRootCert = checkReadableFile(c, pg.sslRootCert, at('sslRootCert'), baseDir)
  if (sslRootCert !== undefined && sslmode !== 'verify-ca' && sslmode !== 'verify-full')
    c.add(at('sslRootCert'), 'is used only with sslmode verify-ca or verify-full')
  const poolSize = integer(c, pg.poolSize, at('poolSize'), 1, 1000)
  const statementTimeoutMs = duration(c, pg.statementTimeout, at('statementTimeout'))
  const connectTimeoutMs = duration(c, pg.connectTimeout, at('connectTimeout'))
  const syncLeaseMs = duration(c, pg.syncLease, at('syncLease'))
  if (syncLeaseMs !== undefined && syncLeaseMs < 1000) c.add(at('syncLease'), 'must be at least 1s')
  if (url === undefined && host === undefined) c.add('storage.postgres', 'needs "url" or "host"')
  const fields = {
    url,
    host,
    port,
    database,
    user,
    passwordFile,
    sslmode: sslmode as SslMode | undefined,
    sslRootCert,
    poolSize,
    statementTimeoutMs,
    connectTimeoutMs,
    syncLeaseMs,
  }
  const out: PostgresStorage = {kind: 'postgres'}
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) Object.assign(out, {[k]: v})
  return out
}

function integer(c: Checker, value: unknown, path: string, min: number, max: number) {
  if (value === undefined) return undefined
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    c.add(path, `must be an integer ${min}..${max}`)
    return undefined
  }
  return value
}

function duration(c: Checker, value: unknown, path: string): number | undefined {
  const text = c.string(value, path)
  if (text === undefined) return undefined
  try {
    return parseDuration(text, path)
  } catch (err) {
    c.add(path, (err as Error).message.replace(/^[^:]*: /, ''))
    return undefined
  }
}
