import type {AuthzCheckResult, PolicyRef} from './check.ts'

const ref = (p: PolicyRef) => `${p.id}${p.name ? ` @id("${p.name}")` : ''} (${p.effect})`

/** The human form of `authz check` (the command prints it; `--json` prints the result). */
export function renderCheck(r: AuthzCheckResult, showRequest: boolean): string {
  const out = [`${r.decision === 'allow' ? 'ALLOW' : 'DENY'} ${r.method}: ${r.reason}`]
  if (r.decision === 'deny' && r.plan !== 'list')
    out.push(
      '  the proxy answers 403 {"jsonrpc":"2.0","id":…,"error":{"code":403,"message":"Unauthorized"}}',
    )
  // When an error denied, the deciding policies are the erroring ones: listed once, below.
  if (r.policies.length && r.errors.length === 0) {
    out.push('deciding policies:')
    for (const p of r.policies) out.push(`  ${ref(p)}`)
  }
  if (r.errors.length) {
    out.push('evaluation errors:')
    for (const e of r.errors) out.push(`  ${ref(e)}: ${e.message}`)
  }
  if (r.annotations) out.push(`tool annotations: ${JSON.stringify(r.annotations)}`)
  if (r.list) {
    out.push(`${r.list.kind} the caller sees (${r.list.kept.length} of ${r.list.total}):`)
    for (const k of r.list.kept) out.push(`  + ${k}`)
    for (const k of r.list.removed) out.push(`  - ${k} (removed)`)
  }
  if (showRequest && r.request) {
    const {principal, action, resource, context, entities} = r.request
    out.push('cedar request:')
    out.push(`  principal: ${principal.type}::${JSON.stringify(principal.id)}`)
    out.push(`  action:    ${action.type}::${JSON.stringify(action.id)}`)
    out.push(`  resource:  ${resource.type}::${JSON.stringify(resource.id)}`)
    out.push(`  context:   ${JSON.stringify(context)}`)
    out.push('  entities:')
    for (const e of entities) out.push(`    ${JSON.stringify(e)}`)
  }
  return out.join('\n')
}
