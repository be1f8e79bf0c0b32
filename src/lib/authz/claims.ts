/**
 * Token claims and tool arguments as Cedar values (contract §6).
 *
 * - objects → records, arrays → sets, booleans and strings as they are;
 * - integral numbers (within ±2^53) → Longs;
 * - other numbers (fractions, huge values) → their JavaScript decimal text, e.g. "1.5": Cedar has
 *   no floating-point type and a string keeps the value visible to `==` and `like` instead of
 *   silently dropping it;
 * - null → dropped (an absent attribute, so `has` is false);
 * - record keys `__entity`, `__extn`, `__expr` → dropped: they are Cedar JSON escapes, and a token
 *   claim must never turn into an entity reference or an extension value.
 */
import type {CedarValue} from './cedar-engine.ts'

const CEDAR_ESCAPES = new Set(['__entity', '__extn', '__expr'])

export function toCedarValue(value: unknown): CedarValue | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value
    case 'number':
      if (Number.isSafeInteger(value)) return value
      return Number.isFinite(value) ? String(value) : undefined
    case 'object': {
      if (value === null) return undefined
      if (Array.isArray(value)) {
        const out: CedarValue[] = []
        for (const item of value) {
          const v = toCedarValue(item)
          if (v !== undefined) out.push(v)
        }
        return out
      }
      const out: Record<string, CedarValue> = {}
      for (const [k, item] of Object.entries(value)) {
        if (CEDAR_ESCAPES.has(k)) continue
        const v = toCedarValue(item)
        if (v !== undefined) out[k] = v
      }
      return out
    }
    default:
      return undefined
  }
}

/** `claim_<name>` attributes for every claim with a representable value. */
export function claimAttributes(
  claims: Record<string, unknown>,
  keep?: (name: string) => boolean,
): Record<string, CedarValue> {
  const out: Record<string, CedarValue> = {}
  for (const [name, value] of Object.entries(claims)) {
    const attr = `claim_${name}`
    if (keep && !keep(attr)) continue
    const v = toCedarValue(value)
    if (v !== undefined) out[attr] = v
  }
  return out
}

/**
 * `arg_<name>` for string/number/boolean arguments; `arg_<name>_present` (true) for objects,
 * arrays and null, whose contents policies cannot inspect.
 */
export function argumentAttributes(
  args: Record<string, unknown> | undefined,
  keep?: (name: string) => boolean,
): Record<string, CedarValue> {
  const out: Record<string, CedarValue> = {}
  if (!args) return out
  for (const [name, value] of Object.entries(args)) {
    if (typeof value === 'string' || typeof value === 'boolean' || typeof value === 'number') {
      const attr = `arg_${name}`
      if (keep && !keep(attr)) continue
      const v = toCedarValue(value)
      if (v !== undefined) out[attr] = v
    } else if (value === null || typeof value === 'object') {
      const attr = `arg_${name}_present`
      if (keep && !keep(attr)) continue
      out[attr] = true
    }
  }
  return out
}

/** A claim by exact key first, then as a dot path through nested objects (`realm_access.roles`). */
export function resolveClaim(claims: Record<string, unknown>, name: string): unknown {
  if (Object.hasOwn(claims, name)) return claims[name]
  if (!name.includes('.')) return undefined
  let cur: unknown = claims
  for (const part of name.split('.')) {
    if (typeof cur !== 'object' || cur === null || Array.isArray(cur) || !Object.hasOwn(cur, part))
      return undefined
    cur = (cur as Record<string, unknown>)[part]
  }
  return cur
}

function names(value: unknown): string[] {
  if (typeof value === 'string') return value === '' ? [] : [value]
  if (Array.isArray(value))
    return value.filter((v): v is string => typeof v === 'string' && v !== '')
  return []
}

// Claim names that identity providers commonly use for groups (generic, Keycloak/Entra roles, Cognito).
export const DEFAULT_GROUP_CLAIMS = ['groups', 'roles', 'cognito:groups'] as const

/**
 * Group and role names that become `ToolgateGroup` parents of the principal. Groups come from
 * `groupClaimName` when set and present, else from the first present of `groups`, `roles`,
 * `cognito:groups`; `roleClaimName` values are added too.
 */
export function groupNames(
  claims: Record<string, unknown>,
  groupClaimName: string,
  roleClaimName: string,
): string[] {
  let groups: string[] | undefined
  if (groupClaimName !== '') {
    const v = resolveClaim(claims, groupClaimName)
    if (v !== undefined && v !== null) groups = names(v)
  }
  if (groups === undefined) {
    for (const name of DEFAULT_GROUP_CLAIMS) {
      const v = claims[name]
      if (v !== undefined && v !== null) {
        groups = names(v)
        break
      }
    }
  }
  const all = new Set(groups ?? [])
  if (roleClaimName !== '') for (const r of names(resolveClaim(claims, roleClaimName))) all.add(r)
  return [...all]
}
