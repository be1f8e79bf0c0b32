import {isDeepStrictEqual} from 'node:util'
import {ToolgateError} from '../errors.ts'
import type {ClientDef} from './catalog.ts'
import {jsonServers} from './json-servers.ts'
import {tomlServers} from './toml-servers.ts'

/** The MCP servers map of one client config file, and edits that return the file's new text. */
export interface ServersDoc {
  entries: Record<string, unknown>
  /** The whole file's value, to check an edit changed nothing else. */
  root: Record<string, unknown>
  set: (name: string, value: Record<string, unknown>) => string
  remove: (name: string) => string
  /** The whole value of an edited text. */
  reread: (text: string) => Record<string, unknown>
}

export function openServersDoc(
  client: ClientDef,
  file: string,
  text: string | undefined,
): ServersDoc {
  return client.format === 'toml' ? tomlServers(file, text) : jsonServers(file, text, client.key)
}

/**
 * The new text with `name` set to `value` (or removed), checked by reading it back: the entry is
 * exactly what was meant and every other server is unchanged. An edit that would do anything
 * else is refused, and the file is left alone.
 */
export function editChecked(
  doc: ServersDoc,
  client: ClientDef,
  file: string,
  name: string,
  value: Record<string, unknown> | undefined,
): string {
  const next = value === undefined ? doc.remove(name) : doc.set(name, value)
  const want = {...doc.entries}
  if (value === undefined) delete want[name]
  else want[name] = value
  const after = doc.reread(next)
  const same =
    isDeepStrictEqual(serversOf(after, client.key), want) &&
    isDeepStrictEqual(withoutServers(after, client.key), withoutServers(doc.root, client.key))
  if (!same)
    throw new ToolgateError(
      'ERR_CONFIG_INVALID',
      `${file}: toolgate cannot edit the "${name}" entry safely in this file's layout; edit it by hand (nothing was changed)`,
    )
  return next
}

function serversOf(root: Record<string, unknown>, key: string[]): unknown {
  let node: unknown = root
  for (const k of key) node = (node as Record<string, unknown> | undefined)?.[k]
  return node ?? {}
}

/** The file's value with the servers map taken out (an empty map counts as none). */
function withoutServers(root: Record<string, unknown>, key: string[]): unknown {
  const copy = structuredClone(root)
  let parent: Record<string, unknown> | undefined = copy
  for (const k of key.slice(0, -1)) parent = parent?.[k] as Record<string, unknown> | undefined
  if (parent) delete parent[key.at(-1)!]
  return copy
}
