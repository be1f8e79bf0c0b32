import {ToolgateError} from '../errors.ts'
import type {ListQuery, RegistryStore, ServerEntry} from '../registry/types.ts'
import type {RegistryRoute} from './paths.ts'
import {parseListQuery} from './query.ts'

/**
 * Answers one matched registry route with the JSON text of the body (contract §1 bodies):
 * list → `{"servers":[…],"metadata":{"count":N,"nextCursor":"…"}}` (nextCursor absent on the last
 * page); one version → `{"server":{…},"_meta":{…}}`. Unknown registry → ERR_REGISTRY_NOT_FOUND,
 * unknown server or version → ERR_NOT_FOUND. Returns text so the caller sends it without re-work.
 */
/**
 * Optional fast path a store may offer: the page with each entry already as JSON text
 * (`{"server":…,"_meta":…}`), so stored documents are never parsed and re-serialised per request.
 * Measured on the example registry: parsing 30 documents costs ~0.3 ms and serialising them
 * ~0.2 ms of a ~0.9 ms request; concatenating text costs ~0.04 ms.
 */
export interface RegistryTextReader {
  listServersText(
    registry: string,
    query: ListQuery,
  ): Promise<{servers: string[]; nextCursor?: string}>
}

function textReader(store: RegistryStore): RegistryTextReader | undefined {
  const candidate = store as RegistryStore & Partial<RegistryTextReader>
  return typeof candidate.listServersText === 'function'
    ? (candidate as RegistryTextReader)
    : undefined
}

export async function answerRegistryRoute(
  store: RegistryStore,
  route: RegistryRoute,
  queryString: string,
): Promise<string> {
  // Parameters are validated before the registry lookup so a bad request is a 400 everywhere.
  const query = route.kind === 'list_servers' ? parseListQuery(queryString) : undefined
  if (!store.hasRegistry(route.registry))
    throw new ToolgateError('ERR_REGISTRY_NOT_FOUND', 'registry not found')
  switch (route.kind) {
    case 'list_servers': {
      const fast = textReader(store)
      if (fast) {
        const page = await fast.listServersText(route.registry, query!)
        return listText(page.servers, page.nextCursor)
      }
      const page = await store.listServers(route.registry, query!)
      return listBody(page.servers, page.nextCursor)
    }
    case 'list_versions': {
      const versions = await store.listVersions(route.registry, route.serverName)
      if (!versions || versions.length === 0) throw new ToolgateError('ERR_NOT_FOUND', 'not found')
      return listBody(versions, undefined)
    }
    case 'get_version': {
      const entry = await store.getVersion(route.registry, route.serverName, route.version)
      if (!entry) throw new ToolgateError('ERR_NOT_FOUND', 'not found')
      return JSON.stringify(entry)
    }
  }
}

// Built by hand so the order of keys is fixed and nextCursor is left out, not null, when absent.
function metadata(count: number, nextCursor: string | undefined): string {
  const cursor = nextCursor === undefined ? '' : `,"nextCursor":${JSON.stringify(nextCursor)}`
  return `"metadata":{"count":${count}${cursor}}}`
}

function listBody(servers: ServerEntry[], nextCursor: string | undefined): string {
  return `{"servers":${JSON.stringify(servers)},${metadata(servers.length, nextCursor)}`
}

function listText(servers: string[], nextCursor: string | undefined): string {
  return `{"servers":[${servers.join(',')}],${metadata(servers.length, nextCursor)}`
}
