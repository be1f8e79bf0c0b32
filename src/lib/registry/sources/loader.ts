import type {ServerJson} from '../types.ts'
import type {InvalidRecord} from './document.ts'

/** What one load of a source produced, before the name filter is applied. */
export interface LoadResult {
  servers: ServerJson[]
  invalid: InvalidRecord[]
  /** Whether the records' official `_meta` comes from an upstream registry we trust (api sources). */
  trustOfficialMeta: boolean
}

export interface SourceLoader {
  /** Human location for logs and errors (a file path or a URL without query or credentials). */
  readonly location: string
  load(signal?: AbortSignal): Promise<LoadResult>
}
