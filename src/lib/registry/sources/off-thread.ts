import type {NameFilter, ServerJson} from '../types.ts'
import {recordsOfFile, type FileRecords, type InvalidRecord, type RecordStream} from './document.ts'
import {compileNameFilter, type NamePredicate} from './name-filter.ts'

/**
 * A source's records after its name filter, as the syncer hands them to the store. When they come
 * from a local file, they can also be read again in a worker thread (`recipe`): parsing and
 * preparing 100,000 records is seconds of CPU and ~100 MB of short-lived garbage, and a store
 * that does it in a worker (the PostgreSQL store) keeps its event loop and its heap for readers.
 * The worker rebuilds the same records from the recipe (`rebuildRecords`) and reports what it
 * skipped; `absorb` counts that here, as if the records had been iterated on this thread.
 */
export interface RecordsRecipe {
  file: FileRecords
  names: NameFilter | undefined
}

/** What a pass over the records skipped: invalid records (the first ones kept) and filtered names. */
export interface RecordsOutcome {
  invalid: InvalidRecord[]
  invalidCount: number
  filteredOut: number
}

export class FilteredRecords implements Iterable<ServerJson> {
  filteredOut = 0
  readonly records: RecordStream
  readonly #names: NameFilter | undefined
  readonly #keep: NamePredicate

  constructor(records: RecordStream, names: NameFilter | undefined, keep?: NamePredicate) {
    this.records = records
    this.#names = names
    this.#keep = keep ?? compileNameFilter(names)
  }

  /** Lazy: records are parsed, validated and filtered one by one as the store consumes them. */
  *[Symbol.iterator](): Iterator<ServerJson> {
    for (const s of this.records) {
      if (this.#keep(s.name)) yield s
      else this.filteredOut++
    }
  }

  /** How to read the same records in a worker thread, when they come from a local file. */
  get recipe(): RecordsRecipe | undefined {
    const file = this.records.file
    return file ? {file, names: this.#names} : undefined
  }

  absorb(outcome: RecordsOutcome): void {
    for (const bad of outcome.invalid) this.records.noteInvalid(bad, 0)
    this.records.noteInvalid(undefined, outcome.invalidCount)
    this.filteredOut += outcome.filteredOut
  }
}

/** In the worker: the records of `recipe` and, once iterated, what they skipped. */
export function rebuildRecords(recipe: RecordsRecipe): {
  records: Iterable<ServerJson>
  outcome: () => RecordsOutcome
} {
  const filtered = new FilteredRecords(recordsOfFile(recipe.file), recipe.names)
  return {
    records: filtered,
    outcome: () => ({
      invalid: filtered.records.invalid,
      invalidCount: filtered.records.invalidCount,
      filteredOut: filtered.filteredOut,
    }),
  }
}
