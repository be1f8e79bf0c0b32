import {on, once} from 'node:events'
import {readlinkSync} from 'node:fs'
import {getPriority, setPriority} from 'node:os'
import type {Writable} from 'node:stream'
import {Worker, type MessagePort} from 'node:worker_threads'
import {ToolgateError} from '../../errors.ts'
import {
  FilteredRecords,
  rebuildRecords,
  type RecordsOutcome,
  type RecordsRecipe,
} from '../sources/off-thread.ts'
import type {ServerJson} from '../types.ts'
import {postedError, workersCanImport, type PostedError} from '../worker-module.ts'
import {stagingChunks} from './staging-rows.ts'

/**
 * The staging rows of a large local file prepared in a worker thread. On the event loop, parsing,
 * hashing and writing 100,000 records as COPY text was ~3 s of CPU in slices plus ~100 MB of
 * short-lived garbage whose collection paused readers (bench/serve-postgres.bench.ts); in the
 * worker, the event loop only passes finished chunks (transferred, not copied) to the COPY stream,
 * and the worker's heap is collected without stopping it. The worker is at most IN_FLIGHT chunks
 * ahead of the database: it waits for credit (Atomics on a shared counter) before each chunk.
 * The worker imports this very module; in the standalone executable (one bundled file, no module
 * to import) the rows are prepared on the event loop instead, as for small files.
 */
const WORKER = `
const {workerData, parentPort} = require('node:worker_threads')
import(workerData.module).then((m) => m.runStageWorker(workerData, parentPort),
  (err) => parentPort.postMessage({error: {message: 'the staging worker could not load its module: ' + String(err && err.message)}}))
`

/** Files below this size are staged on the event loop (a worker would cost more than it saves). */
export const WORKER_STAGING_BYTES = 4 * 1024 * 1024
const CHUNK_ROWS = 256
const IN_FLIGHT = 4
// Slots of the shared counter: chunks the worker may still send, and "stop" (set by the event loop).
const CREDITS = 0
const CANCELLED = 1

interface StageWorkerData {
  recipe: RecordsRecipe
  trust: boolean
  shared: Int32Array
}

type WorkerMessage =
  | {chunk: Uint8Array}
  | {done: true; skipped: number; outcome: RecordsOutcome}
  | {error: PostedError}

/** Records to stage in a worker: the syncer's records and how the worker reads them again. */
export interface WorkerStaging {
  records: FilteredRecords
  recipe: RecordsRecipe
}

/** How to stage `servers` in a worker, or undefined to stage them on the event loop. */
export function workerStaging(servers: Iterable<ServerJson>): WorkerStaging | undefined {
  if (!(servers instanceof FilteredRecords) || !workersCanImport) return undefined
  const recipe = servers.recipe
  return recipe && recipe.file.stat.size >= WORKER_STAGING_BYTES
    ? {records: servers, recipe}
    : undefined
}

/**
 * Writes the staging rows to `copy` from a worker and counts what its pass skipped (invalid
 * records, filtered names) on `records`; returns how many records were skipped as invalid or
 * duplicate here.
 */
export async function stageInWorker(
  copy: Writable,
  {records, recipe}: WorkerStaging,
  trust: boolean,
): Promise<number> {
  const shared = new Int32Array(new SharedArrayBuffer(8))
  shared[CREDITS] = IN_FLIGHT
  const workerData: StageWorkerData & {module: string} = {
    module: import.meta.url,
    recipe,
    trust,
    shared,
  }
  const worker = new Worker(WORKER, {eval: true, workerData})
  try {
    for await (const [message] of on(worker, 'message', {close: ['exit']})) {
      const m = message as WorkerMessage
      if ('error' in m) throw postedError(m.error)
      if ('done' in m) {
        records.absorb(m.outcome)
        return m.skipped
      }
      if (copy.errored) throw copy.errored
      const chunk = Buffer.from(m.chunk.buffer, m.chunk.byteOffset, m.chunk.byteLength)
      if (!copy.write(chunk)) await once(copy, 'drain')
      Atomics.add(shared, CREDITS, 1)
      Atomics.notify(shared, CREDITS)
    }
    throw new ToolgateError('ERR_STORAGE', 'storage: the staging worker stopped before its end')
  } finally {
    // A worker waiting for credit is woken to see it must stop; terminate() ends it either way.
    Atomics.store(shared, CANCELLED, 1)
    Atomics.store(shared, CREDITS, IN_FLIGHT)
    Atomics.notify(shared, CREDITS)
    await worker.terminate()
  }
}

/**
 * The worker's thread runs at the process's nice value + 3 (a lower priority): when it and the
 * event loop want the same core, the kernel gives the event loop about two thirds and the worker a
 * third (CFS weights 1024 and 526), and preempts the worker as soon as a reader's request wakes
 * the event loop. At nice 19 readers fared no better, and with the process held to one core by
 * saturating readers the worker got ~1.5% of it: a 100,000-version sync took over 120 s, against
 * 35–49 s at nice 3. Linux only (a thread's own nice value, through its thread id); elsewhere the
 * worker keeps the process's priority.
 */
const WORKER_NICE = 3

function lowerThreadPriority(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop())
    // Relative to the process's own: under `nice -n 10` the worker goes to 13, never above it.
    if (Number.isSafeInteger(tid) && tid > 0)
      setPriority(tid, Math.min(19, getPriority(tid) + WORKER_NICE))
  } catch {
    // No /proc (not Linux) or a refused change: the worker keeps the process's priority.
  }
}

/** In the worker: prepares the rows and posts them in chunks, each after a credit. */
export function runStageWorker(data: StageWorkerData, port: MessagePort): void {
  const {shared} = data
  lowerThreadPriority()
  const encoder = new TextEncoder()
  try {
    const {records, outcome} = rebuildRecords(data.recipe)
    const counts = {skipped: 0}
    const cut = (rows: number) => rows >= CHUNK_ROWS
    for (const text of stagingChunks(records, data.trust, counts, cut)) {
      while (Atomics.load(shared, CREDITS) <= 0) Atomics.wait(shared, CREDITS, 0)
      if (Atomics.load(shared, CANCELLED) !== 0) return
      Atomics.sub(shared, CREDITS, 1)
      const chunk = encoder.encode(text)
      port.postMessage({chunk} satisfies WorkerMessage, [chunk.buffer])
    }
    port.postMessage({done: true, skipped: counts.skipped, outcome: outcome()} as WorkerMessage)
  } catch (err) {
    const e = err as Error & {code?: string}
    port.postMessage({
      error: {message: e.message, code: e.code, toolgate: e instanceof ToolgateError},
    } satisfies WorkerMessage)
  }
}
