import type {Checker} from '../config/checker.ts'

/**
 * Tool shaping of one gateway backend (issue 37): `allow` and `deny` globs over the backend's own
 * tool names (`*` any run of characters, `?` one), then renames and new descriptions. A tool
 * that is filtered out is neither listed nor callable: to a caller it does not exist.
 */

export interface ToolOverride {
  name?: string
  description?: string
}

export interface ToolShaping {
  allow?: RegExp[]
  deny?: RegExp[]
  /** Original name → what replaces it. */
  override: Map<string, ToolOverride>
  /** Exposed (renamed) name → original name. */
  renamed: Map<string, string>
}

/** Tool names the MCP spec allows (2025-11-25 "Tool names"): what a rename may produce. */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/

export function globToRegExp(glob: string): RegExp {
  const body = glob.replace(/[.+^${}()|[\]\\*?]/g, (ch) =>
    ch === '*' ? '.*' : ch === '?' ? '.' : `\\${ch}`,
  )
  return new RegExp(`^${body}$`, 's')
}

export function compileToolShaping(c: Checker, value: unknown, path: string): ToolShaping {
  const shaping: ToolShaping = {override: new Map(), renamed: new Map()}
  if (value === undefined) return shaping
  const obj = c.object(value, path, ['allow', 'deny', 'override'])
  if (!obj) return shaping
  for (const key of ['allow', 'deny'] as const) {
    const list = c.stringList(obj[key], `${path}.${key}`)
    if (list) shaping[key] = list.map(globToRegExp)
  }
  if (obj.override !== undefined) {
    const overrides = c.object(obj.override, `${path}.override`, Object.keys(obj.override ?? {}))
    for (const [original, spec] of Object.entries(overrides ?? {})) {
      const at = `${path}.override.${original}`
      const o = c.object(spec, at, ['name', 'description'])
      if (!o) continue
      const name = c.string(o.name, `${at}.name`, {nonEmpty: true})
      const description = c.string(o.description, `${at}.description`)
      if (name !== undefined && !TOOL_NAME.test(name))
        c.add(`${at}.name`, 'a tool name is 1-128 letters, digits, "_", "-" or "."')
      if (name !== undefined) {
        const other = shaping.renamed.get(name)
        if (other !== undefined) c.add(`${at}.name`, `"${name}" is also the new name of ${other}`)
        shaping.renamed.set(name, original)
      }
      shaping.override.set(original, {
        ...(name !== undefined ? {name} : {}),
        ...(description !== undefined ? {description} : {}),
      })
    }
  }
  return shaping
}

/** Whether the backend's tool `original` passes allow and deny. */
export function toolAllowed(shaping: ToolShaping, original: string): boolean {
  if (shaping.allow && !shaping.allow.some((re) => re.test(original))) return false
  return !shaping.deny?.some((re) => re.test(original))
}

/** The name a backend tool is listed under (before the prefix), or undefined when filtered out. */
export function exposedToolName(shaping: ToolShaping, original: string): string | undefined {
  if (!toolAllowed(shaping, original)) return undefined
  const renamed = shaping.override.get(original)?.name
  if (renamed !== undefined) return renamed
  // A tool whose own name another tool was renamed to gives way: the rename was asked for.
  const taker = shaping.renamed.get(original)
  return taker !== undefined && taker !== original ? undefined : original
}

/** The backend's own name for an exposed name (before the prefix), or undefined: no such tool. */
export function originalToolName(shaping: ToolShaping, exposed: string): string | undefined {
  const original = shaping.renamed.get(exposed) ?? exposed
  return exposedToolName(shaping, original) === exposed ? original : undefined
}
