/**
 * Registry routes answered through a policy (docs/registry-authz.md): only what the caller may see.
 *
 * - Lists filter inside the scan, not after slicing: rows are read in (name, version) order past
 *   the hidden ones until the page holds `limit` visible entries plus one to prove a next page
 *   exists. `nextCursor` is made from the last entry shown, so a cursor never names a hidden server,
 *   and `metadata.count` counts only entries shown.
 * - A hidden server or version is `404 not found`, exactly as a missing one: existence does not leak.
 */
import {ToolgateError} from '../errors.ts'
import {decodeCursor, encodeCursor} from '../registry/cursor.ts'
import type {ListQuery, RegistryStore, ServerEntry} from '../registry/types.ts'
import type {RegistryViewer} from '../registry-authz/registry-policy.ts'
import {listText} from './bodies.ts'
import type {RegistryRoute} from './paths.ts'

interface ScanRow {
  name: string
  version: string
  /** The entry's JSON text, read on demand; undefined when the row was removed meanwhile. */
  entry(): string | undefined
}

class EntryGone extends Error {}

function gone(): never {
  throw new EntryGone()
}

/** A store that can scan positions and read entries on demand (SqliteRegistryStore). */
interface RowScanner {
  scanServers(registry: string, query: ListQuery): Promise<{rows: ScanRow[]; more: boolean}>
}

const FIRST_BATCH = 64
const MAX_BATCH = 2048

function scanner(store: RegistryStore): RowScanner['scanServers'] {
  const candidate = store as RegistryStore & Partial<RowScanner>
  if (typeof candidate.scanServers === 'function') return candidate.scanServers.bind(candidate)
  // Any other store: its public pages (at most 100 rows), whose cursor is the last row scanned.
  return async (registry, query) => {
    const page = await store.listServers(registry, {...query, limit: Math.min(query.limit, 100)})
    return {
      rows: page.servers.map((e) => ({
        name: e.server.name,
        version: e.server.version,
        entry: () => JSON.stringify(e),
      })),
      more: page.nextCursor !== undefined,
    }
  }
}

export async function answerFilteredRoute(
  store: RegistryStore,
  route: RegistryRoute,
  query: ListQuery | undefined,
  viewer: RegistryViewer,
): Promise<string> {
  const {registry} = route
  switch (route.kind) {
    case 'list_servers':
      return filteredList(store, registry, query!, viewer)
    case 'list_versions': {
      const versions = await store.listVersions(registry, route.serverName)
      const shown = (versions ?? []).filter((e) => allowed(viewer, registry, e))
      if (shown.length === 0) throw notFound()
      return listText(
        shown.map((e) => JSON.stringify(e)),
        undefined,
      )
    }
    case 'get_version': {
      const entry = await store.getVersion(registry, route.serverName, route.version)
      if (!entry || !allowed(viewer, registry, entry)) throw notFound()
      return JSON.stringify(entry)
    }
  }
}

function allowed(viewer: RegistryViewer, registry: string, entry: ServerEntry): boolean {
  return viewer.allows('get_server', registry, entry.server.name, entry.server.version, () => entry)
}

function notFound(): ToolgateError {
  return new ToolgateError('ERR_NOT_FOUND', 'not found')
}

async function filteredList(
  store: RegistryStore,
  registry: string,
  query: ListQuery,
  viewer: RegistryViewer,
): Promise<string> {
  if (viewer.seesNothing) {
    // Nothing to scan for; a bad cursor is still the 400 it is for everyone else.
    if (query.cursor !== undefined) decodeCursor(query.cursor)
    return listText([], undefined)
  }
  const scan = scanner(store)
  const shown: {row: ScanRow; text: string}[] = []
  let cursor = query.cursor
  // Enough for a page when most rows are visible; doubled while the caller sees few.
  let batch = Math.min(MAX_BATCH, Math.max(FIRST_BATCH, (query.limit + 1) * 2))
  for (;;) {
    const {rows, more} = await scan(registry, {...query, cursor, limit: batch})
    for (const row of rows) {
      let text: string | undefined
      const read = () => (text ??= row.entry() ?? gone())
      try {
        const load = () => JSON.parse(read()) as ServerEntry
        if (!viewer.allows('list_servers', registry, row.name, row.version, load)) continue
        shown.push({row, text: read()})
      } catch (err) {
        // Removed by another process's sync between the scan and the read: not there any more.
        if (err instanceof EntryGone) continue
        throw err
      }
      if (shown.length > query.limit) break
    }
    const last = rows[rows.length - 1]
    if (shown.length > query.limit || !more || !last) break
    cursor = encodeCursor({name: last.name, version: last.version})
    batch = Math.min(MAX_BATCH, batch * 2)
    // A caller who sees little makes a long scan: let other requests run between batches.
    await new Promise((resolve) => setImmediate(resolve))
  }
  let nextCursor: string | undefined
  if (shown.length > query.limit) {
    shown.length = query.limit
    const end = shown[shown.length - 1]!.row
    nextCursor = encodeCursor({name: end.name, version: end.version})
  }
  return listText(
    shown.map((s) => s.text),
    nextCursor,
  )
}
