import {ToolgateError} from '../errors.ts'
import type {RegistryStore, ServerEntry} from '../registry/types.ts'
import type {RegistryRoute} from './paths.ts'
import {parseListQuery} from './query.ts'

/**
 * Answers one matched registry route with the JSON text of the body (contract §1 bodies):
 * list → `{"servers":[…],"metadata":{"count":N,"nextCursor":"…"}}` (nextCursor absent on the last
 * page); one version → `{"server":{…},"_meta":{…}}`. Unknown registry → ERR_REGISTRY_NOT_FOUND,
 * unknown server or version → ERR_NOT_FOUND. Returns text so the caller sends it without re-work.
 */
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

function listBody(servers: ServerEntry[], nextCursor: string | undefined): string {
  // Built by hand so the order of keys is fixed and nextCursor is left out, not null, when absent.
  const cursor = nextCursor === undefined ? '' : `,"nextCursor":${JSON.stringify(nextCursor)}`
  return `{"servers":${JSON.stringify(servers)},"metadata":{"count":${servers.length}${cursor}}}`
}
