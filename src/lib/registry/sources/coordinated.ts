import {isToolgateError} from '../../errors.ts'
import type {Logger} from '../../log/logger.ts'
import type {SourceConfig, SyncClaim, SyncCoordinator, SyncLease} from '../types.ts'

/**
 * The syncer's side of coordinated syncs on a shared store (contract §1 "Scale-out"):
 * - a timer tick claims the source's lease and syncs only when it won it (`claimed`); `fresh`
 *   (another replica synced it less than an interval ago) and `busy` (another is syncing) skip;
 * - at start, `busy` waits for the other replica to finish or its lease to expire, and a source
 *   without an interval (a local file) is synced even when fresh, since only this replica reads
 *   this file at start;
 * - a managed source always waits and never counts as fresh (see below).
 */
export async function claimOrWait(
  coordinator: SyncCoordinator,
  config: SourceConfig,
  initial: boolean,
  signal: AbortSignal,
): Promise<SyncClaim> {
  // A managed source is synced because something was just published to it: that sync must
  // happen (never skipped as fresh), after any sync in progress elsewhere, which may have read
  // the published rows before this one was written.
  const managed = config.kind === 'managed'
  const force = managed || (initial && config.syncIntervalMs === undefined)
  const wait = initial || managed
  // A publish waits for another replica's sync of the source, not for ever: its answer has a
  // caller. (At start the wait is for the lease to expire, as before.)
  const deadline = managed && !initial ? Date.now() + MANAGED_WAIT_MS : Infinity
  for (;;) {
    let claim: SyncClaim
    try {
      claim = await coordinator.claimSync(config.name, config.syncIntervalMs, force)
    } catch (err) {
      // At start, a database that went away again is waited for, as at the first connection.
      if (!initial || signal.aborted || !isToolgateError(err, 'ERR_STORAGE_UNAVAILABLE')) throw err
      claim = {kind: 'busy', holder: ''}
    }
    if (claim.kind !== 'busy' || !wait || signal.aborted || Date.now() > deadline) return claim
    // A publish waits on another replica's short sync of the same managed source: poll finely.
    await sleep(managed ? 100 : Math.min(1000, coordinator.leaseMs / 3), signal)
  }
}

const MANAGED_WAIT_MS = 15_000

/** Renews `lease` every third of its duration until the returned timer is cleared. */
export function keepLease(
  coordinator: SyncCoordinator,
  source: string,
  lease: SyncLease,
  log: Logger,
): NodeJS.Timeout {
  const timer = setInterval(() => {
    coordinator.renewSync(source, lease).then(
      (held) => {
        if (!held) log.warn('sync lease lost; this sync will be discarded', {source})
      },
      (err: unknown) =>
        log.warn('sync lease renewal failed', {source, error: (err as Error).message}),
    )
  }, coordinator.leaseMs / 3)
  timer.unref()
  return timer
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms)
    function done() {
      clearTimeout(t)
      signal.removeEventListener('abort', done)
      resolve()
    }
    signal.addEventListener('abort', done, {once: true})
  })
}
