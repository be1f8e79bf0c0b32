import {pickLatest} from '../latest.ts'
import {OFFICIAL_META_KEY, type PublishedVersion, type RegistryStore} from '../types.ts'
import {RecordStream} from './document.ts'
import type {LoadResult, SourceLoader} from './loader.ts'

/**
 * A `managed` source (serve.yaml `managed: {}`): its records are what was published to it, read
 * back from the store's `published_versions` and synced like any other source, so a publish
 * reaches `registry_entries`, the search index and every replica's caches by the one sync path.
 * The official block is ours to set: status, publish and update times from the table, and
 * `isLatest` on exactly one version per name: the latest (contract §1 rule) of the versions not
 * deleted, or of all of them when every version is deleted.
 */
export class ManagedLoader implements SourceLoader {
  readonly location: string
  readonly #store: RegistryStore
  readonly #source: string

  constructor(source: string, store: RegistryStore) {
    this.#source = source
    this.#store = store
    this.location = `managed source "${source}"`
  }

  async load(): Promise<LoadResult> {
    const rows = await this.#store.publishedVersions(this.#source)
    const latest = latestOfEachName(rows)
    const texts = rows.map((row) => {
      const server = JSON.parse(row.serverJson) as Record<string, unknown>
      const meta = (server._meta ?? {}) as Record<string, unknown>
      server._meta = {
        ...meta,
        [OFFICIAL_META_KEY]: {
          status: row.status,
          publishedAt: row.publishedAt,
          updatedAt: row.updatedAt,
          isLatest: latest.has(row),
        },
      }
      return JSON.stringify(server)
    })
    return {records: new RecordStream(texts.length, () => texts), trustOfficialMeta: true}
  }
}

function latestOfEachName(rows: PublishedVersion[]): Set<PublishedVersion> {
  const byName = new Map<string, PublishedVersion[]>()
  for (const row of rows) {
    const group = byName.get(row.name)
    if (group) group.push(row)
    else byName.set(row.name, [row])
  }
  const latest = new Set<PublishedVersion>()
  for (const group of byName.values()) {
    const live = group.filter((v) => v.status !== 'deleted')
    const best = pickLatest(live.length > 0 ? live : group)
    if (best) latest.add(best)
  }
  return latest
}
