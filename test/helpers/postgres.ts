/**
 * A throwaway PostgreSQL cluster for tests (testing.md): `initdb` into a temp dir, `pg_ctl start` on
 * a free loopback port with its socket in that dir and `fsync=off`, one database per call of
 * `createDatabase`. PostgreSQL refuses to run as root, and CI runs as root: the server then runs as
 * the `postgres` user (setpriv), which owns the temp dir. Everything stays on 127.0.0.1.
 */
import {execFile, execFileSync} from 'node:child_process'
import {chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync} from 'node:fs'
import {createServer} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {promisify} from 'node:util'
import {needs} from './component.ts'

const run = promisify(execFile)

/** The newest installed server's bin dir (Debian: /usr/lib/postgresql/<major>/bin), or undefined. */
export function postgresBinDir(): string | undefined {
  const base = '/usr/lib/postgresql'
  if (!existsSync(base)) return undefined
  const majors = readdirSync(base)
    .filter((d) => /^\d+$/.test(d) && existsSync(join(base, d, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a))
  return majors[0] ? join(base, majors[0], 'bin') : undefined
}

/** `skip` option for tests needing PostgreSQL (fails instead under CI, see component.ts). */
export const postgresMissing = needs(
  'postgresql',
  postgresBinDir() ? false : 'PostgreSQL server binaries not found (Debian package postgresql)',
)

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address()
      s.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0))
    })
  })
}

export interface PgCluster {
  port: number
  dir: string
  /** A fresh, empty database; returns its URL (user `postgres`, no password, loopback trust). */
  createDatabase(name?: string): Promise<string>
  /** Runs SQL as the superuser on `database` (default `postgres`) through psql. */
  psql(sql: string, database?: string): Promise<string>
  /** Fast shutdown (connections are terminated), then start again on the same port. */
  stop(): Promise<void>
  start(): Promise<void>
  destroy(): Promise<void>
}

const asRoot = typeof process.getuid === 'function' && process.getuid() === 0

// Commands run as the postgres user when we are root (the server refuses to run as root).
function command(bin: string, args: string[]): [string, string[]] {
  return asRoot
    ? ['setpriv', ['--reuid=postgres', '--regid=postgres', '--init-groups', bin, ...args]]
    : [bin, args]
}

let dbCounter = 0

export async function startPgCluster(): Promise<PgCluster> {
  const bin = postgresBinDir()
  if (!bin) throw new Error('PostgreSQL binaries not found')
  const dir = mkdtempSync(join(tmpdir(), 'tg-pg-'))
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim())
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim())
    chownSync(dir, uid, gid)
  }
  chmodSync(dir, 0o700)
  const data = join(dir, 'data')
  const exec = (name: string, args: string[]) => {
    const [c, a] = command(join(bin, name), args)
    return run(c, a, {timeout: 60_000, env: {...process.env, LC_ALL: 'C.UTF-8'}})
  }
  await exec('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync'])
  const port = await freePort()
  const opts =
    `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off ` +
    '-c synchronous_commit=off -c full_page_writes=off -c max_connections=200'
  const start = async () => {
    await exec('pg_ctl', [
      '-D',
      data,
      '-l',
      join(dir, 'log'),
      '-w',
      '-t',
      '60',
      '-o',
      opts,
      'start',
    ])
  }
  const stop = async () => {
    await exec('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop'])
  }
  await start()
  const psql = async (sql: string, database = 'postgres') => {
    const {stdout} = await run(
      join(bin, 'psql'),
      ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', database, '-At', '-c', sql],
      {timeout: 60_000},
    )
    return stdout
  }
  return {
    port,
    dir,
    async createDatabase(name) {
      const db = name ?? `tg_${process.pid}_${++dbCounter}`
      await psql(`CREATE DATABASE ${db}`)
      return `postgres://postgres@127.0.0.1:${port}/${db}`
    },
    psql,
    stop,
    start,
    async destroy() {
      await stop().catch(() => undefined)
      rmSync(dir, {recursive: true, force: true})
    },
  }
}
