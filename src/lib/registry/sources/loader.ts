import type {RecordStream} from './document.ts'

/** What one load of a source produced, before the name filter is applied. */
export interface LoadResult {
  /** Validated lazily while iterated; invalid records are counted in `records.invalidCount`, the first ones kept in `records.invalid`. */
  records: RecordStream
  /** Whether the records' official `_meta` comes from an upstream registry we trust (api sources). */
  trustOfficialMeta: boolean
}

export interface SourceLoader {
  /** Human location for logs and errors (a file path or a URL without query or credentials). */
  readonly location: string
  load(signal?: AbortSignal): Promise<LoadResult>
}
