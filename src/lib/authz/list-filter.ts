/**
 * Filtering of `tools/list`, `prompts/list` and `resources/list` results to what the caller could
 * call, get or read (contract §6). Each item is decided exactly as the matching call would be
 * (same entity builder), a tool with its listed annotations and no arguments. Everything else in
 * the result (`nextCursor`, `_meta`) is kept; an empty list stays `[]`. A result that is not a
 * well-formed list fails closed: the caller gets an error, never the unfiltered list.
 */
import {isRecord} from '../mcp/json-rpc.ts'
import {annotationsOf} from './annotation-cache.ts'
import type {Authorizer} from './authorizer.ts'
import type {PrincipalPart, ResourceSpec} from './entity-model.ts'
import type {ListKind} from './method-table.ts'

export class MalformedListError extends Error {}

export interface FilterOutcome {
  result: Record<string, unknown>
  kept: number
  total: number
}

function itemSpec(kind: ListKind, item: unknown, index: number): ResourceSpec {
  if (!isRecord(item)) throw new MalformedListError(`${kind}[${index}] is not an object`)
  if (kind === 'resources') {
    if (typeof item.uri !== 'string')
      throw new MalformedListError(`resources[${index}].uri is not a string`)
    return {action: 'read_resource', id: item.uri}
  }
  if (typeof item.name !== 'string')
    throw new MalformedListError(`${kind}[${index}].name is not a string`)
  if (kind === 'prompts') return {action: 'get_prompt', id: item.name}
  return {action: 'call_tool', id: item.name, annotations: annotationsOf(item)}
}

export function filterListResult(
  authorizer: Authorizer,
  principal: PrincipalPart,
  kind: ListKind,
  result: unknown,
): FilterOutcome {
  if (!isRecord(result)) throw new MalformedListError('result is not an object')
  const items = result[kind]
  if (!Array.isArray(items)) throw new MalformedListError(`result.${kind} is not an array`)
  // Check every item first, so one bad item fails the whole list rather than being skipped.
  const specs = items.map((item, i) => itemSpec(kind, item, i))
  const kept = items.filter(
    (_, i) => authorizer.decide(principal, specs[i] as ResourceSpec, false).allowed,
  )
  return {result: {...result, [kind]: kept}, kept: kept.length, total: items.length}
}
