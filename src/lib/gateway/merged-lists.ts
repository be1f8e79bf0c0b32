import {isRecord} from '../mcp/json-rpc.ts'
import type {BackendConfig} from './config.ts'
import {prefixedName, prefixedUri} from './names.ts'
import {exposedToolName} from './shaping.ts'

/**
 * The gateway's merged lists (issue 37): every backend's items with prefixed names, shaped tools,
 * sorted by their exposed key and paged with cursors of our own. A cursor names the last key
 * given, not a position, so it stays valid when a backend comes or goes between two pages: the
 * next page starts after that key in whatever the list is then.
 */

export type ListKind = 'tools' | 'prompts' | 'resources' | 'resourceTemplates'
export type Item = Record<string, unknown>

export const LIST_METHODS: Readonly<Record<string, ListKind>> = {
  'tools/list': 'tools',
  'prompts/list': 'prompts',
  'resources/list': 'resources',
  'resources/templates/list': 'resourceTemplates',
}

/** The server capability a backend must declare to be asked for a list of this kind. */
export const LIST_CAPABILITY: Readonly<Record<ListKind, string>> = {
  tools: 'tools',
  prompts: 'prompts',
  resources: 'resources',
  resourceTemplates: 'resources',
}

/** `notifications/<kind>/list_changed` → the lists it makes stale. */
export const CHANGED_LISTS: Readonly<Record<string, ListKind[]>> = {
  'notifications/tools/list_changed': ['tools'],
  'notifications/prompts/list_changed': ['prompts'],
  'notifications/resources/list_changed': ['resources', 'resourceTemplates'],
}

const KEY_FIELD: Readonly<Record<ListKind, string>> = {
  tools: 'name',
  prompts: 'name',
  resources: 'uri',
  resourceTemplates: 'uriTemplate',
}

/** One backend item as the client sees it, or undefined when it is malformed or filtered out. */
export function exposeItem(
  kind: ListKind,
  backend: BackendConfig,
  item: unknown,
): Item | undefined {
  if (!isRecord(item)) return undefined
  const key = item[KEY_FIELD[kind]]
  if (typeof key !== 'string') return undefined
  const {prefix} = backend
  if (kind === 'tools') {
    const exposed = exposedToolName(backend.tools, key)
    if (exposed === undefined) return undefined
    const description = backend.tools.override.get(key)?.description
    return {
      ...item,
      name: prefixedName(prefix, exposed),
      ...(description !== undefined ? {description} : {}),
    }
  }
  if (kind === 'prompts') return {...item, name: prefixedName(prefix, key)}
  const name = typeof item.name === 'string' ? {name: prefixedName(prefix, item.name)} : {}
  return {...item, [KEY_FIELD[kind]]: prefixedUri(prefix, key), ...name}
}

export function itemKey(kind: ListKind, item: Item): string {
  return item[KEY_FIELD[kind]] as string
}

/** Sorted by exposed key, the first of equal keys kept (a backend that lists one name twice). */
export function mergeSorted(kind: ListKind, parts: Item[][]): Item[] {
  const all = parts.flat().sort((a, b) => compare(itemKey(kind, a), itemKey(kind, b)))
  return all.filter((item, i) => i === 0 || itemKey(kind, all[i - 1]!) !== itemKey(kind, item))
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

export type Page = {items: Item[]; nextCursor?: string} | {error: string}

export function pageOf(kind: ListKind, items: Item[], cursor: unknown, size: number): Page {
  let start = 0
  if (cursor !== undefined) {
    const after = decodeCursor(kind, cursor)
    if (after === undefined) return {error: 'invalid cursor'}
    // First key after the last one given (binary search over the sorted list).
    let lo = 0
    let hi = items.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (compare(itemKey(kind, items[mid]!), after) <= 0) lo = mid + 1
      else hi = mid
    }
    start = lo
  }
  const slice = items.slice(start, start + size)
  const more = start + size < items.length
  return {
    items: slice,
    ...(more ? {nextCursor: encodeCursor(kind, itemKey(kind, slice[slice.length - 1]!))} : {}),
  }
}

function encodeCursor(kind: ListKind, after: string): string {
  return Buffer.from(JSON.stringify([kind, after])).toString('base64url')
}

function decodeCursor(kind: ListKind, cursor: unknown): string | undefined {
  if (typeof cursor !== 'string' || cursor.length > 4096) return undefined
  try {
    const v: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
    return Array.isArray(v) && v.length === 2 && v[0] === kind && typeof v[1] === 'string'
      ? v[1]
      : undefined
  } catch {
    return undefined
  }
}

/** Resource URIs inside a result (read contents, links in tool output and prompt messages), prefixed. */
export function prefixResultUris(prefix: string, result: unknown): unknown {
  if (!isRecord(result)) return result
  const fix = (entry: unknown): unknown => {
    if (!isRecord(entry)) return entry
    let out = entry
    if (typeof entry.uri === 'string') out = {...out, uri: prefixedUri(prefix, entry.uri)}
    if (isRecord(entry.resource) && typeof entry.resource.uri === 'string')
      out = {...out, resource: {...entry.resource, uri: prefixedUri(prefix, entry.resource.uri)}}
    return out
  }
  const isResourceContent = (c: unknown) =>
    isRecord(c) && (c.type === 'resource_link' || c.type === 'resource')
  const out: Record<string, unknown> = {...result}
  if (Array.isArray(result.contents)) out.contents = result.contents.map(fix)
  // prompts/get: each message holds one content item.
  if (Array.isArray(result.messages))
    out.messages = result.messages.map((m) =>
      isRecord(m) && isResourceContent(m.content) ? {...m, content: fix(m.content)} : m,
    )
  if (Array.isArray(result.content))
    out.content = result.content.map((c) => (isResourceContent(c) ? fix(c) : c))
  return out
}
