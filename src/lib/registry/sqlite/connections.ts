import type {DatabaseSync, StatementSync} from 'node:sqlite'
import {ToolgateError} from '../../errors.ts'
import {checkpointInWorker} from '../wal-checkpoint.ts'
import {openConnections} from './open.ts'

// Rows handled between two yields to the event loop during a sync. 500 keeps each slice to a few
// ms: with 2000, a 100 MB source syncing put the event-loop delay p99 at ~45 ms (the bound is 50),
// with 500 at ~20 ms, for the same total sync time (test/lib/server/sync-event-loop.test.ts).
export const BATCH = 500

const tick = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * The state every part of the SQLite store shares: the readers' connection `db`, the writers'
 * connection `wdb` (see openConnections), their prepared statements (cached by name, so a name is
 * one SQL text store-wide), the write queue, WAL checkpoints and the registry definitions.
 */
export class StoreConnections {
  readonly path: string
  readonly busyTimeoutMs: number
  db: DatabaseSync | undefined
  wdb: DatabaseSync | undefined
  closing = false
  /** Registry name → its sources in precedence order, as last committed. */
  registries = new Map<string, string[]>()
  #statements = new Map<string, StatementSync>()
  #wstatements = new Map<string, StatementSync>()
  // Writes run one at a time (they share wdb and its staging table); this is the queue's tail.
  #queue: Promise<unknown> = Promise.resolve()
  #checkpointing: Promise<unknown> | undefined
  #checkpointAgain = false
  /** Set once a checkpoint worker could not run (workers unavailable): checkpoint in-thread instead. */
  #inThreadCheckpoint = false
  // Committed write transactions on this connection (part of dataVersion()).
  #writes = 0
  // PRAGMA data_version as read in this event-loop turn (undefined: not read yet in this turn).
  #othersVersion: number | undefined

  readonly #checkpointOffThread: (path: string, busyTimeoutMs: number) => Promise<unknown>

  constructor(
    path: string,
    busyTimeoutMs: number,
    checkpoint: (path: string, busyTimeoutMs: number) => Promise<unknown> = checkpointInWorker,
  ) {
    this.path = path
    this.busyTimeoutMs = busyTimeoutMs
    this.#checkpointOffThread = checkpoint
  }

  /** Where a corrupt database file was moved at open (it was then rebuilt empty). */
  movedAside: string | undefined

  async open(): Promise<void> {
    const {db, wdb, movedAside} = await openConnections(this.path, this.busyTimeoutMs)
    this.movedAside = movedAside
    this.db = db
    this.wdb = wdb
    this.closing = false
  }

  /** Waits for the write in progress to stop at its next yield (rolled back), then closes. */
  async close(): Promise<void> {
    this.closing = true
    await this.#queue
    await this.#checkpointing
    this.#statements.clear()
    this.#wstatements.clear()
    if (this.wdb !== this.db) this.wdb?.close()
    this.db?.close()
    this.db = undefined
    this.wdb = undefined
  }

  database(): DatabaseSync {
    if (!this.db) throw new ToolgateError('ERR_STORAGE', 'storage: the store is not open')
    return this.db
  }

  writer(): DatabaseSync {
    if (!this.wdb) throw new ToolgateError('ERR_STORAGE', 'storage: the store is not open')
    return this.wdb
  }

  /** A statement on the readers' connection, prepared once per name. */
  stmt(name: string, sql: string): StatementSync {
    return this.#reader(name, sql, false)
  }

  /**
   * The same, returning each row as an array of its columns in SELECT order: the read paths use
   * it, as building an object with named keys per row costs more than the row's values do. The
   * kind is chosen when a name's statement is prepared, so a name is one kind for good.
   */
  arrayStmt(name: string, sql: string): StatementSync {
    return this.#reader(name, sql, true)
  }

  #reader(name: string, sql: string, arrays: boolean): StatementSync {
    let s = this.#statements.get(name)
    if (!s) {
      s = this.database().prepare(sql)
      if (arrays) s.setReturnArrays(true)
      this.#statements.set(name, s)
    }
    return s
  }

  /** A statement on the writers' connection, prepared once per name. */
  wstmt(name: string, sql: string): StatementSync {
    let s = this.#wstatements.get(name)
    if (!s) {
      s = this.writer().prepare(sql)
      this.#wstatements.set(name, s)
    }
    return s
  }

  /**
   * Committed writes through this store, plus other connections' commits (PRAGMA data_version).
   * Every cached response is checked against it, so it is asked once per request. Our own
   * commits count at once; other connections' commits are read once per event-loop turn: the
   * pragma was ~13% of serve's CPU on cached pages (bench/perf-table.bench.ts, issue 19), and under
   * load one turn answers dozens of requests. A commit by another process that lands during a turn
   * is seen from the next turn on (well under a millisecond later), as if the requests of that
   * turn had been answered a moment earlier.
   */
  dataVersion(): number {
    if (this.#othersVersion === undefined) {
      const row = this.stmt('data_version', 'PRAGMA data_version').get()
      this.#othersVersion = Number(row?.data_version ?? 0)
      setImmediate(() => (this.#othersVersion = undefined))
    }
    return this.#writes + this.#othersVersion
  }

  /** Runs `fn` after every write queued before it, whatever their outcome. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(() => {
      if (this.closing) throw new ToolgateError('ERR_STORAGE', 'storage: the store is closing')
      return fn()
    })
    this.#queue = run.catch(() => undefined)
    return run
  }

  /** Lets the event loop run (requests, /health); a close() meanwhile aborts the write. */
  async pause(): Promise<void> {
    await tick()
    if (this.closing) throw new ToolgateError('ERR_STORAGE', 'storage: the store is closing')
  }

  /** One write transaction that never yields. */
  syncTransaction(fn: () => void): void {
    const db = this.writer()
    db.exec('BEGIN IMMEDIATE')
    try {
      fn()
      db.exec('COMMIT')
      this.#committed()
    } catch (err) {
      db.exec('ROLLBACK')
      throw err
    }
  }

  /**
   * One write transaction whose body may yield (`pause`) when readers have their own connection;
   * with a single connection, yielding would expose uncommitted rows to readers, so it does not.
   */
  async writeTransaction(fn: (pause: () => Promise<void>) => Promise<void>): Promise<void> {
    const db = this.writer()
    const pause = db === this.db ? async () => {} : () => this.pause()
    db.exec('BEGIN IMMEDIATE')
    try {
      await fn(pause)
      db.exec('COMMIT')
      this.#committed()
    } catch (err) {
      if (db.isTransaction) db.exec('ROLLBACK')
      throw err
    }
  }

  #committed(): void {
    this.#writes++
    if (this.wdb === this.db) return
    // One checkpoint at a time; a commit during one asks for another afterwards. A failure (a
    // reader holding the log, a full disk) is harmless: the log is kept and the next one retries.
    if (this.#checkpointing) {
      this.#checkpointAgain = true
      return
    }
    const run = async (): Promise<void> => {
      do {
        this.#checkpointAgain = false
        await this.#checkpoint()
      } while (this.#checkpointAgain && !this.closing)
    }
    this.#checkpointing = run().finally(() => (this.#checkpointing = undefined))
  }

  /**
   * A PASSIVE checkpoint reports a busy log instead of failing, so a rejected worker means the
   * worker itself could not run. Automatic checkpoints are off on the writer connection, so never
   * leave it at that (the log would grow for the life of the process): fall back to checkpointing
   * on the writer connection, which blocks the loop briefly but keeps the log bounded.
   */
  async #checkpoint(): Promise<void> {
    if (!this.#inThreadCheckpoint) {
      try {
        await this.#checkpointOffThread(this.path, this.busyTimeoutMs)
        return
      } catch {
        this.#inThreadCheckpoint = true
      }
    }
    if (this.closing || !this.wdb) return
    try {
      this.wdb.prepare('PRAGMA wal_checkpoint(PASSIVE)').get()
    } catch {
      // A full disk or an I/O fault: the log is kept and the next commit tries again.
    }
  }

  /** Whether checkpoints fell back to the writer connection (for tests and diagnostics). */
  get checkpointsInThread(): boolean {
    return this.#inThreadCheckpoint
  }
}
