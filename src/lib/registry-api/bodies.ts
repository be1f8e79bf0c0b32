import type {ServerEntry} from '../registry/types.ts'

/**
 * List bodies of contract §1: `{"servers":[…],"metadata":{"count":N,"nextCursor":"…"}}`. Built by
 * hand so the order of keys is fixed and nextCursor is left out, not null, when absent.
 */
function metadata(count: number, nextCursor: string | undefined): string {
  const cursor = nextCursor === undefined ? '' : `,"nextCursor":${JSON.stringify(nextCursor)}`
  return `"metadata":{"count":${count}${cursor}}}`
}

export function listBody(servers: ServerEntry[], nextCursor: string | undefined): string {
  return `{"servers":${JSON.stringify(servers)},${metadata(servers.length, nextCursor)}`
}

/** The same from entry texts (each already `{"server":…,"_meta":…}`). */
export function listText(servers: string[], nextCursor: string | undefined): string {
  return `{"servers":[${servers.join(',')}],${metadata(servers.length, nextCursor)}`
}
