import {mkdirSync} from 'node:fs'
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
  try {
    const db = open()
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
        'PRIMARY KEY (name, version))',
    )
    return {db, wdb}
  } catch (err) {
    throw new ToolgateError('ERR_STORAGE', `storage: cannot open ${path}: ${messageOf(err)}`, {
      cause: err,
    })
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
