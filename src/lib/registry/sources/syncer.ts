import {watch, type FSWatcher} from 'node:fs'
import {basename, dirname, resolve} from 'node:path'
import {ToolgateError} from '../../errors.ts'
import {createOutboundClient, type OutboundClient} from '../../http/outbound.ts'
import {createLogger, type Logger} from '../../log/logger.ts'
import type {RegistryStore, SourceConfig, SyncCoordinator, SyncLease} from '../types.ts'
import {ApiLoader} from './api-source.ts'
import {FilePathLoader, FileUrlLoader} from './file-source.ts'
import {ManagedLoader} from './managed-source.ts'
import {defaultGitDir, GitLoader} from './git-source.ts'
import type {SourceLoader} from './loader.ts'
import {claimOrWait, keepLease} from './coordinated.ts'
import {compileNameFilter, type NamePredicate} from './name-filter.ts'
import {FilteredRecords} from './off-thread.ts'
import {syncPhase} from '../sync-phases.ts'

/**
 * Keeps every configured source loaded into the store (contract §1):
 * - `start()` loads all sources once; any failure there is fatal (ERR_SOURCE_LOAD naming the
 *   source and its file/URL) so `serve` exits non-zero before listening;
 * - afterwards file paths are watched (debounced) and every source with an interval is re-read on
 *   it; a failed reload is logged and counted, the last good data keeps being served, and
 *   readiness is unaffected;
 * - syncs of one source never overlap: a trigger during a sync queues exactly one more.
 */
export interface SourceSyncerOptions {
  store: RegistryStore
  sources: SourceConfig[]
  logger?: Logger
  /**
   * HTTP client of url and api sources. Default: a guarded client (src/lib/http/outbound.ts) with
   * `requestTimeoutMs`, created on first need and closed by stop(). Private and loopback addresses
   * are allowed: these URLs are operator-configured and trusted as given (contract §2).
   */
  outbound?: OutboundClient
  now?: () => Date
  /** Relative file paths resolve against this directory (the config file's). Default: cwd. */
  baseDir?: string
  /** Quiet time after the last file event before re-reading (editors write in bursts). */
  debounceMs?: number
  /** Timeout of each HTTP request (url sources, each api page). */
  requestTimeoutMs?: number
  /** Upper bound on pages of one api sync (100 entries a page). */
  maxApiPages?: number
  /** Watch file paths for changes. Default true. */
  watch?: boolean
  /**
   * Set when the store is shared by several replicas (PostgreSQL): a source is synced only by the
   * replica holding its lease, at most once per interval across all replicas (see coordinated.ts).
   */
  coordinator?: SyncCoordinator
  /** Where git sources keep their clones; default `<XDG data>/toolgate/git-sources`. */
  gitDir?: string
}

export interface SourceStats {
  name: string
  kind: SourceConfig['kind']
  location: string
  /** Loaded successfully at least once. */
  ready: boolean
  lastAttemptAt?: Date
  lastSuccessAt?: Date
  lastErrorAt?: Date
  /** Message of the last failed sync; cleared by the next success. */
  lastError?: string
  /** Versions stored by the last successful sync (after the name filter). */
  versions: number
  /** Records skipped as invalid by the last successful sync. */
  invalidRecords: number
  /** Records dropped by filter.names in the last successful sync. */
  filteredOut: number
  syncs: number
  failures: number
  lastDurationMs?: number
  totalDurationMs: number
}

const MAX_INVALID_LOGGED = 10

interface SourceState {
  config: SourceConfig
  loader: SourceLoader
  filter: NamePredicate
  stats: SourceStats
  running: Promise<void> | undefined
  pending: boolean
  timer: NodeJS.Timeout | undefined
  debounce: NodeJS.Timeout | undefined
  watcher: FSWatcher | undefined
  /** The loader's `version` of the last successful sync (a git commit). */
  lastVersion: string | undefined
}

export class SourceSyncer {
  #store: RegistryStore
  #log: Logger
  #now: () => Date
  #debounceMs: number
  #watch: boolean
  #coordinator: SyncCoordinator | undefined
  #states = new Map<string, SourceState>()
  #abort = new AbortController()
  #started = false
  #stopped = false
  // The HTTP client this syncer created (and closes); undefined when none or one was given.
  #ownClient: OutboundClient | undefined

  constructor(options: SourceSyncerOptions) {
    this.#store = options.store
    this.#log = options.logger ?? createLogger()
    this.#now = options.now ?? (() => new Date())
    this.#debounceMs = options.debounceMs ?? 250
    this.#watch = options.watch ?? true
    this.#coordinator = options.coordinator
    const timeoutMs = options.requestTimeoutMs ?? 30_000
    let client = options.outbound
    const http = (): OutboundClient => {
      if (!client) {
        client = createOutboundClient({allowPrivateIP: true, timeoutMs, label: 'registry sources'})
        this.#ownClient = client
      }
      return client
    }
    for (const [i, config] of options.sources.entries()) {
      const where = `sources[${i}] (${config.name})`
      if (this.#states.has(config.name)) {
        throw new ToolgateError(
          'ERR_CONFIG_INVALID',
          `${where}: source name "${config.name}" is used twice`,
        )
      }
      let loader: SourceLoader
      if (config.kind === 'api') {
        if (!config.syncIntervalMs) {
          throw new ToolgateError(
            'ERR_CONFIG_INVALID',
            `${where}.syncPolicy.interval: required for api sources`,
          )
        }
        loader = new ApiLoader(config.endpoint, {
          client: http(),
          maxPages: options.maxApiPages ?? 10_000,
        })
      } else if (config.kind === 'managed') {
        loader = new ManagedLoader(config.name, options.store)
      } else if (config.kind === 'git') {
        loader = new GitLoader(config, options.gitDir ?? defaultGitDir())
      } else if (config.url !== undefined && config.path === undefined) {
        if (!config.syncIntervalMs) {
          throw new ToolgateError(
            'ERR_CONFIG_INVALID',
            `${where}.syncPolicy.interval: required for file.url sources`,
          )
        }
        loader = new FileUrlLoader(config.url, http())
      } else if (config.path !== undefined && config.url === undefined) {
        loader = new FilePathLoader(resolve(options.baseDir ?? process.cwd(), config.path))
      } else {
        throw new ToolgateError(
          'ERR_CONFIG_INVALID',
          `${where}.file: set exactly one of path or url`,
        )
      }
      this.#states.set(config.name, {
        config,
        loader,
        filter: compileNameFilter(config.filter?.names),
        stats: {
          name: config.name,
          kind: config.kind,
          location: loader.location,
          ready: false,
          versions: 0,
          invalidRecords: 0,
          filteredOut: 0,
          syncs: 0,
          failures: 0,
          totalDurationMs: 0,
        },
        running: undefined,
        pending: false,
        timer: undefined,
        debounce: undefined,
        watcher: undefined,
        lastVersion: undefined,
      })
    }
  }

  /**
   * Initial load of every source (in parallel), then watchers and timers. Throws ERR_SOURCE_LOAD
   * naming each source that failed; nothing keeps running after a throw.
   */
  async start(): Promise<void> {
    if (this.#started) throw new ToolgateError('ERR_INTERNAL', 'source syncer already started')
    this.#started = true
    await this.#store.retainSources?.([...this.#states.keys()])
    const results = await Promise.allSettled(
      [...this.#states.values()].map((s) => this.#initial(s)),
    )
    const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []))
    if (failures.length > 0) {
      await this.stop()
      const message = failures.map((e) => (e instanceof Error ? e.message : String(e))).join('; ')
      throw new ToolgateError('ERR_SOURCE_LOAD', message, {cause: failures[0]})
    }
    for (const state of this.#states.values()) this.#arm(state)
  }

  /** Every source has loaded at least once (the /readiness condition for sources). */
  isReady(): boolean {
    for (const s of this.#states.values()) if (!s.stats.ready) return false
    return true
  }

  stats(): SourceStats[] {
    return [...this.#states.values()].map((s) => ({...s.stats}))
  }

  /**
   * Syncs one source now (or after the sync in progress) and resolves when done. Failures are
   * recorded in the stats and logged, never thrown: the last good data stays.
   */
  async syncNow(name: string): Promise<SourceStats> {
    const state = this.#states.get(name)
    if (!state) throw new ToolgateError('ERR_NOT_FOUND', `no source named "${name}"`)
    await this.#trigger(state)
    return {...state.stats}
  }

  async stop(): Promise<void> {
    this.#stopped = true
    this.#abort.abort()
    for (const s of this.#states.values()) {
      if (s.timer) clearInterval(s.timer)
      if (s.debounce) clearTimeout(s.debounce)
      s.watcher?.close()
      s.timer = s.debounce = s.watcher = undefined
      s.pending = false
    }
    await Promise.allSettled([...this.#states.values()].map((s) => s.running))
    const client = this.#ownClient
    this.#ownClient = undefined
    await client?.close().catch(() => undefined)
  }

  // ----- internals -----

  #arm(state: SourceState): void {
    const {config, loader} = state
    if (config.syncIntervalMs) {
      state.timer = setInterval(() => void this.#trigger(state), config.syncIntervalMs)
      state.timer.unref()
    }
    if (this.#watch && loader instanceof FilePathLoader) {
      // Watch the directory, not the file: editors and atomic writers replace the file (rename),
      // which ends a watch on the old inode.
      const file = basename(loader.path)
      try {
        state.watcher = watch(dirname(loader.path), {persistent: false}, (_event, changed) => {
          if (changed !== null && changed.toString() !== file) return
          if (state.debounce) clearTimeout(state.debounce)
          state.debounce = setTimeout(() => {
            state.debounce = undefined
            void this.#trigger(state)
          }, this.#debounceMs)
          state.debounce.unref()
        })
        state.watcher.on('error', (err) => {
          this.#log.warn('registry source watch failed; relying on the interval', {
            source: config.name,
            error: err.message,
          })
          state.watcher?.close()
          state.watcher = undefined
        })
      } catch (err) {
        this.#log.warn('registry source cannot be watched; relying on the interval', {
          source: config.name,
          error: (err as Error).message,
        })
      }
    }
  }

  /**
   * The first sync of a source, registered as the one running: a `syncNow` meanwhile queues behind
   * it. One sync per source at a time is what lets a replica reclaim a lease in its own name
   * (postgres/leases.ts).
   */
  #initial(state: SourceState): Promise<void> {
    const first = this.#syncOnce(state, true)
    state.running = first
      .catch(() => undefined)
      .then(() => {
        state.running = undefined
        return state.pending && !this.#stopped ? this.#trigger(state) : undefined
      })
    return first
  }

  // Serialises syncs of one source; a trigger during a sync queues one more (coalesced).
  #trigger(state: SourceState): Promise<void> {
    if (this.#stopped) return Promise.resolve()
    if (state.running) {
      state.pending = true
      return state.running
    }
    const run = async () => {
      do {
        state.pending = false
        try {
          await this.#syncOnce(state, false)
        } catch (err) {
          // Reload failure: keep serving the last good data (contract §1); already recorded.
          this.#log.error('registry source reload failed; serving the last good data', {
            source: state.config.name,
            error: err instanceof Error ? err.message : String(err),
          })
        }
      } while (state.pending && !this.#stopped)
    }
    state.running = run().finally(() => {
      state.running = undefined
    })
    return state.running
  }

  async #syncOnce(state: SourceState, initial: boolean): Promise<void> {
    const {stats, config, loader} = state
    let lease: SyncLease | undefined
    if (this.#coordinator) {
      const claim = await claimOrWait(this.#coordinator, config, initial, this.#abort.signal)
      if (claim.kind !== 'claimed') {
        // Another replica synced it recently: its data is in the shared store, so this replica
        // counts the source as loaded without reading it again.
        if (claim.kind === 'fresh' && claim.lastSuccessAt) {
          stats.ready = true
          stats.lastSuccessAt ??= claim.lastSuccessAt
        }
        return
      }
      lease = claim.lease
    }
    const heartbeat = lease && keepLease(this.#coordinator!, config.name, lease, this.#log)
    const started = performance.now()
    stats.lastAttemptAt = this.#now()
    syncPhase(config.name, 'reading')
    try {
      // On a shared store another replica may have synced other data since this one's last
      // sync, so "unchanged since my last sync" proves nothing there: always load.
      const last = this.#coordinator ? undefined : state.lastVersion
      const loaded = await loader.load(this.#abort.signal, last)
      if (this.#stopped) {
        if (lease) await this.#coordinator!.abandonSync(config.name, lease).catch(() => undefined)
        return
      }
      if ('unchanged' in loaded) {
        Object.assign(stats, {ready: true, lastSuccessAt: this.#now(), lastError: undefined})
        stats.syncs++
        this.#log.debug('registry source unchanged', {source: config.name, version: loaded.version})
        return
      }
      const {records} = loaded
      const kept = new FilteredRecords(records, config.filter?.names, state.filter)
      const result = await this.#store.replaceSource(config.name, kept, this.#now(), {
        trustOfficialMeta: loaded.trustOfficialMeta,
        ...(lease ? {lease} : {}),
      })
      const invalid = records.invalidCount + (result.skipped ?? 0)
      for (const bad of records.invalid.slice(0, MAX_INVALID_LOGGED)) {
        this.#log.warn('registry record skipped', {
          source: config.name,
          location: loader.location,
          index: bad.index,
          field: bad.field,
          reason: bad.reason,
        })
      }
      if (invalid > MAX_INVALID_LOGGED) {
        this.#log.warn('registry records skipped', {source: config.name, count: invalid})
      }
      state.lastVersion = loaded.version
      Object.assign(stats, {
        ready: true,
        lastSuccessAt: this.#now(),
        lastError: undefined,
        versions: result.versions,
        invalidRecords: invalid,
        filteredOut: kept.filteredOut,
      })
      stats.syncs++
      this.#log.info('registry source synced', {
        source: config.name,
        versions: result.versions,
        added: result.added,
        updated: result.updated,
        removed: result.removed,
        invalid,
      })
    } catch (err) {
      if (lease) await this.#coordinator!.abandonSync(config.name, lease).catch(() => undefined)
      stats.failures++
      stats.lastErrorAt = this.#now()
      const inner = err instanceof Error ? err.message : String(err)
      stats.lastError = inner
      throw new ToolgateError(
        err instanceof ToolgateError && err.code === 'ERR_STORAGE'
          ? 'ERR_STORAGE'
          : 'ERR_SOURCE_LOAD',
        `source "${config.name}": ${inner}`,
        {cause: err, details: {source: config.name, location: loader.location}},
      )
    } finally {
      syncPhase(config.name, 'done')
      if (heartbeat) clearInterval(heartbeat)
      const ms = performance.now() - started
      stats.lastDurationMs = ms
      stats.totalDurationMs += ms
    }
  }
}
