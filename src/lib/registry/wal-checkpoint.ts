import {Worker} from 'node:worker_threads'

/**
 * Checkpoints a WAL database off the main thread. After a large sync the write-ahead log holds
 * every page the sync wrote; SQLite's automatic checkpoint would copy them back into the database
 * file inside the COMMIT call, stalling the event loop (~0.75 s for 100,000 versions here). The
 * store's writer connection turns the automatic checkpoint off and calls this after each commit
 * instead. PASSIVE (SQLite `sqlite3_wal_checkpoint_v2`): copies what it can without waiting for
 * readers or blocking writers; whatever is left goes with the next one (or when the store closes).
 */
const SCRIPT = `
const {workerData, parentPort} = require('node:worker_threads')
// node:sqlite is experimental on Node 22: keep its warning off the user's terminal.
process.removeAllListeners('warning')
process.on('warning', () => {})
const {DatabaseSync} = require('node:sqlite')
const db = new DatabaseSync(workerData.path)
try {
  db.exec('PRAGMA busy_timeout = ' + workerData.busyTimeoutMs)
  const row = db.prepare('PRAGMA wal_checkpoint(PASSIVE)').get()
  parentPort.postMessage({busy: row.busy, log: row.log, checkpointed: row.checkpointed})
} finally {
  db.close()
}
`

export interface CheckpointResult {
  busy: number
  log: number
  checkpointed: number
}

export function checkpointInWorker(path: string, busyTimeoutMs: number): Promise<CheckpointResult> {
  return new Promise((resolve, reject) => {
    let result: CheckpointResult | undefined
    const worker = new Worker(SCRIPT, {eval: true, workerData: {path, busyTimeoutMs}})
    worker.once('message', (m: CheckpointResult) => (result = m))
    worker.once('error', reject)
    worker.once('exit', (code) => {
      if (result) resolve(result)
      else reject(new Error(`WAL checkpoint worker exited with code ${code}`))
    })
  })
}
