import {existsSync, mkdirSync, renameSync} from 'node:fs'
import {dirname} from 'node:path'
import type {DatabaseSync} from 'node:sqlite'
import {ToolgateError} from '../../errors.ts'
import {MIGRATIONS, runMigrations} from '../migrations.ts'
import {loadSqlite} from '../sqlite-module.ts'

/**
 * Opens the store's connections: the readers' `db` and the writers' `wdb`, a second connection to
 * the same file (so a sync's transaction can stay open across yields without readers seeing it),
 * or `db` itself for `:memory:`, which cannot be shared. Migrations run on the way.
 */
export async function openConnections(
  path: string,
  busyTimeoutMs: number,
): Promise<{db: DatabaseSync; wdb: DatabaseSync; movedAside?: string}> {
  try {
    return await openOnce(path, busyTimeoutMs)
  } catch (err) {
    // The database is a cache of the sources (rebuilt at every start): a damaged file is moved
    // aside (kept for a post-mortem, never deleted) and a fresh one built, instead of refusing to
    // serve. Anything else (permissions, a full disk, a lock) stays an error.
    if (path === ':memory:' || !isCorrupt((err as {cause?: unknown}).cause) || !existsSync(path))
      throw err
    const movedAside = `${path}.corrupt-${new Date().toISOString().replace(/[:.]/g, '-')}`
    try {
      renameSync(path, movedAside)
      for (const suffix of ['-wal', '-shm'])
        if (existsSync(path + suffix)) renameSync(path + suffix, movedAside + suffix)
    } catch (moveErr) {
      throw new ToolgateError(
        'ERR_STORAGE',
        `storage: ${path} is corrupt and could not be moved aside: ${messageOf(moveErr)}`,
        {cause: moveErr},
      )
    }
    return {...(await openOnce(path, busyTimeoutMs)), movedAside}
  }
}

/** SQLITE_CORRUPT (11) or SQLITE_NOTADB (26), as node:sqlite reports them. */
function isCorrupt(err: unknown): boolean {
  const code = (err as {errcode?: number} | undefined)?.errcode
  return code === 11 || code === 26
}

async function openOnce(
  path: string,
  busyTimeoutMs: number,
): Promise<{db: DatabaseSync; wdb: DatabaseSync}> {
  const {DatabaseSync} = await loadSqlite()
  if (path !== ':memory:') {
    try {
      mkdirSync(dirname(path), {recursive: true, mode: 0o700})
    } catch (err) {
      throw new ToolgateError('ERR_STORAGE', `storage: cannot create the directory of ${path}`, {
        cause: err,
      })
    }
  }
  const open = () => {
    const db = new DatabaseSync(path)
    db.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`)
    db.exec('PRAGMA synchronous = NORMAL')
    return db
  }
  let db: DatabaseSync | undefined
  try {
    db = open()
    // WAL: readers never block the syncer's write transaction and vice versa.
    db.exec('PRAGMA journal_mode = WAL')
    runMigrations(db, MIGRATIONS)
    const wdb = path === ':memory:' ? db : open()
    // Checkpoints happen off the main thread after each write (StoreConnections#committed).
    if (wdb !== db) wdb.exec('PRAGMA wal_autocheckpoint = 0')
    // Per-connection scratch space for replaceSource (not part of the persistent schema).
    wdb.exec(
      'CREATE TEMP TABLE IF NOT EXISTS staging (name TEXT NOT NULL, version TEXT NOT NULL, ' +
        'server_json TEXT NOT NULL, content_hash TEXT NOT NULL, search_text TEXT NOT NULL, ' +
        'up_status TEXT, up_published TEXT, up_updated TEXT, up_updated_ms INTEGER, up_latest INTEGER, ' +
        'traits INTEGER NOT NULL, PRIMARY KEY (name, version))',
    )
    return {db, wdb}
  } catch (err) {
    try {
      db?.close()
    } catch {
      // Already unusable; the error below is what matters.
    }
    throw new ToolgateError('ERR_STORAGE', `storage: cannot open ${path}: ${messageOf(err)}`, {
      cause: err,
    })
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
