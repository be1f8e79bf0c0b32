/**
 * Cedar schemas of the two entity models toolgate builds requests from, for `authz lint`: the
 * proxy's (contract §6: Client, ToolgateGroup, Tool/Prompt/Resource, three actions) and the
 * registry's (docs/registry-authz.md: Server in Registry, list_servers/get_server, and publish/set_status of
 * docs/registry-publish.md). Attributes are
 * checked by lint.ts itself: claims and arguments are open-ended, which a Cedar schema cannot say.
 */
import type {CedarEntity, CedarEntityUid} from './cedar-engine.ts'

export type LintModel = 'proxy' | 'registry'

export const MODEL_ACTIONS: Record<LintModel, Record<string, string>> = {
  proxy: {call_tool: 'Tool', get_prompt: 'Prompt', read_resource: 'Resource'},
  registry: {list_servers: 'Server', get_server: 'Server', publish: 'Server', set_status: 'Server'},
}

const BASE_TYPES: Record<LintModel, string[]> = {
  proxy: ['Client', 'ToolgateGroup', 'Tool', 'Prompt', 'Resource'],
  registry: ['Client', 'ToolgateGroup', 'Server', 'Registry'],
}

const ident = (s: string) => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(s) ? s : JSON.stringify(s))

/**
 * Entity types are the model's plus any entities_json defines; any entity may be a member of any
 * type (entities_json decides hierarchies, e.g. Tool in ToolgateGroup). Action groups defined in
 * entities_json are declared with their members.
 */
export function schemaText(model: LintModel, entities: CedarEntity[]): string {
  const uidOf = (v: unknown) => v as CedarEntityUid
  const types = new Set(BASE_TYPES[model])
  const actionParents = new Map<string, Set<string>>()
  const groups = new Set<string>()
  for (const e of entities) {
    const uid = uidOf(e.uid)
    const parents = (e.parents ?? []).map(uidOf)
    if (uid.type === 'Action') {
      for (const p of parents) if (p.type === 'Action') groups.add(p.id)
      actionParents.set(
        uid.id,
        new Set(parents.filter((p) => p.type === 'Action').map((p) => p.id)),
      )
      continue
    }
    types.add(uid.type)
    for (const p of parents) if (p.type !== 'Action') types.add(p.type)
  }
  const all = [...types].map(ident).join(', ')
  const lines = [...types].map((t) => `entity ${ident(t)} in [${all}];`)
  const actions = MODEL_ACTIONS[model]
  const memberOf = (id: string) => {
    const ps = [...(actionParents.get(id) ?? [])]
    return ps.length ? ` in [${ps.map((p) => JSON.stringify(p)).join(', ')}]` : ''
  }
  for (const g of groups)
    if (!(g in actions)) lines.push(`action ${JSON.stringify(g)}${memberOf(g)};`)
  for (const [action, resource] of Object.entries(actions))
    lines.push(
      `action ${JSON.stringify(action)}${memberOf(action)} appliesTo { principal: [Client], resource: [${resource}] };`,
    )
  return lines.join('\n')
}
