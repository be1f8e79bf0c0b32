import type {RecordStream} from './document.ts'

/** What one load of a source produced, before the name filter is applied. */
export interface LoadResult {
  /** Validated lazily while iterated; invalid records are counted in `records.invalidCount`, the first ones kept in `records.invalid`. */
  records: RecordStream
  /** Whether the records' official `_meta` comes from an upstream registry we trust (api sources). */
  trustOfficialMeta: boolean
  /** What was loaded (a git commit), handed back as `lastVersion` once it synced. */
  version?: string
}

/** A loader that can tell its data has not moved since the last good sync (a git commit). */
export interface Unchanged {
  unchanged: true
  version: string
}

export interface SourceLoader {
  /** Human location for logs and errors (a file path or a URL without query or credentials). */
  readonly location: string
  /**
   * `lastVersion`: the `version` of the last load that synced successfully, if the loader gave
   * one; a loader whose data is still at that version may answer `unchanged`.
   */
  load(signal?: AbortSignal, lastVersion?: string): Promise<LoadResult | Unchanged>
}
