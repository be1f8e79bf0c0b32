/**
 * `cedar.entities_json`: operator-defined Cedar entities (for example per-tool owners or
 * sensitivity labels). Accepts Cedar's JSON entity format, with `uid` written as `{type,id}`,
 * `{"__entity":{type,id}}`, or the text form `Type::"id"` (also `Type::id`, which configs written
 * for similar gateways use), and normalises every uid to `{type,id}` so request entities can be
 * merged by uid.
 */
import {isRecord} from '../mcp/json-rpc.ts'
import {
  checkEntities,
  type CedarEntity,
  type CedarEntityUid,
  type CedarValue,
} from './cedar-engine.ts'

export class EntitiesJsonError extends Error {
  readonly path: string
  constructor(path: string, message: string) {
    super(`${path}: ${message}`)
    this.path = path
  }
}

const UID_TEXT =
  /^([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)::(?:"((?:[^"\\]|\\.)*)"|([^"]+))$/

export function parseUid(value: unknown, path: string): CedarEntityUid {
  if (typeof value === 'string') {
    const m = UID_TEXT.exec(value)
    if (!m) throw new EntitiesJsonError(path, `"${value}" is not an entity uid like Tool::"name"`)
    const id = m[2] !== undefined ? (JSON.parse(`"${m[2]}"`) as string) : (m[3] as string)
    return {type: m[1] as string, id}
  }
  const inner = isRecord(value) && isRecord(value.__entity) ? value.__entity : value
  if (
    isRecord(inner) &&
    typeof inner.type === 'string' &&
    typeof inner.id === 'string' &&
    inner.type !== ''
  ) {
    return {type: inner.type, id: inner.id}
  }
  throw new EntitiesJsonError(
    path,
    'must be an entity uid: {"type": "...", "id": "..."} or Type::"id"',
  )
}

export function uidKey(uid: CedarEntityUid): string {
  return `${uid.type}::${JSON.stringify(uid.id)}`
}

/** Parses and checks the `entities_json` text; errors name the field path. */
export function parseEntitiesJson(text: string, path = 'cedar.entities_json'): CedarEntity[] {
  if (text.trim() === '') return []
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw new EntitiesJsonError(path, `is not valid JSON (${(err as Error).message})`)
  }
  if (!Array.isArray(value)) throw new EntitiesJsonError(path, 'must hold a JSON array of entities')
  const seen = new Set<string>()
  const entities = value.map((raw, i): CedarEntity => {
    const p = `${path}[${i}]`
    if (!isRecord(raw))
      throw new EntitiesJsonError(p, 'must be an object with uid, attrs and parents')
    for (const key of Object.keys(raw)) {
      if (!['uid', 'attrs', 'parents', 'tags'].includes(key))
        throw new EntitiesJsonError(`${p}.${key}`, 'unknown field')
    }
    const uid = parseUid(raw.uid, `${p}.uid`)
    const key = uidKey(uid)
    if (seen.has(key)) throw new EntitiesJsonError(`${p}.uid`, `duplicate entity ${key}`)
    seen.add(key)
    const attrs = raw.attrs ?? {}
    if (!isRecord(attrs)) throw new EntitiesJsonError(`${p}.attrs`, 'must be an object')
    const parentsRaw = raw.parents ?? []
    if (!Array.isArray(parentsRaw))
      throw new EntitiesJsonError(`${p}.parents`, 'must be an array of entity uids')
    const parents = parentsRaw.map((u, j) => parseUid(u, `${p}.parents[${j}]`))
    const entity: CedarEntity = {uid, attrs: attrs as Record<string, CedarValue>, parents}
    if (raw.tags !== undefined) {
      if (!isRecord(raw.tags)) throw new EntitiesJsonError(`${p}.tags`, 'must be an object')
      entity.tags = raw.tags as Record<string, CedarValue>
    }
    return entity
  })
  const problem = checkEntities(entities)
  if (problem !== undefined)
    throw new EntitiesJsonError(path, `Cedar rejected the entities: ${problem}`)
  return entities
}
