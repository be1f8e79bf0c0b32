import {parse, stringify, TomlError} from 'smol-toml'
import {ToolgateError} from '../errors.ts'
import type {ServersDoc} from './servers-doc.ts'

/**
 * Codex's `config.toml`: `[mcp_servers.NAME]` tables. smol-toml parses and checks the file and
 * writes our entry; the edit itself replaces only the entry's own tables in the text, so the
 * user's comments and every other table stay as they were. (A TOML library that rewrites the
 * whole file would drop the user's comments.) An entry written some other way — inline, or as
 * dotted keys — is refused rather than guessed at.
 */
export function tomlServers(file: string, text: string | undefined): ServersDoc {
  const source = text ?? ''
  const root = parseChecked(file, source)
  const servers = root.mcp_servers
  if (servers !== undefined && (typeof servers !== 'object' || Array.isArray(servers)))
    throw new ToolgateError('ERR_CONFIG_INVALID', `${file}: "mcp_servers" is not a table`)
  const entries = (servers ?? {}) as Record<string, unknown>
  const eol = source.includes('\r\n') ? '\r\n' : '\n'

  const edit = (name: string, value: Record<string, unknown> | undefined) => {
    const lines = source === '' ? [] : source.split(eol)
    const sections = sectionsOf(lines, name)
    if (sections.length === 0 && Object.hasOwn(entries, name))
      throw new ToolgateError(
        'ERR_CONFIG_INVALID',
        `${file}: the "${name}" server is not written as a [mcp_servers.${name}] table; edit it by hand (nothing was changed)`,
      )
    const block =
      value === undefined
        ? []
        : stringify({mcp_servers: {[name]: value}})
            .trimEnd()
            .split('\n')
    const at = sections[0]?.start ?? lines.length
    const kept = lines.filter((_, i) => !sections.some((s) => i >= s.start && i < s.end))
    // Every line before the entry's first table is kept, so it goes back where it was (or last).
    const before = kept.slice(0, at)
    const after = kept.slice(at)
    if (block.length && before.some((l) => l.trim()) && before.at(-1)?.trim() !== '')
      block.unshift('')
    if (block.length && after.some((l) => l.trim()) && after[0]?.trim() !== '') block.push('')
    const out = [...before, ...block, ...after]
    const joined = out.join(eol)
    return joined.endsWith(eol) || joined === '' ? joined : joined + eol
  }
  return {
    entries,
    root,
    set: (name, value) => edit(name, value),
    remove: (name) => edit(name, undefined),
    reread: (next) => parseChecked(file, next),
  }
}

function parseChecked(file: string, text: string): Record<string, unknown> {
  try {
    return plain(parse(text)) as Record<string, unknown>
  } catch (err) {
    if (err instanceof TomlError) {
      const what = err.message.split('\n')[0]!.replace(/^Invalid TOML document: /, '')
      throw new ToolgateError(
        'ERR_CONFIG_INVALID',
        `${file}:${err.line}:${err.column}: ${what}; fix the file (nothing was changed)`,
      )
    }
    throw err
  }
}

/** smol-toml's tables have no prototype; plain objects compare equal to the entries we build. */
function plain(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(plain)
  if (value === null || typeof value !== 'object' || value instanceof Date) return value
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]))
}

interface Section {
  start: number
  end: number
}

const HEADER = /^\s*\[\[?\s*(.+?)\s*\]\]?\s*(?:#.*)?$/

/** The line ranges of `[mcp_servers.NAME]` and its sub-tables, each up to the next header. */
function sectionsOf(lines: string[], name: string): Section[] {
  const headers = lines.flatMap((line, i) => {
    const m = HEADER.exec(line)
    return m ? [{line: i, key: keySegments(m[1]!)}] : []
  })
  return headers.flatMap((h, n) => {
    if (h.key[0] !== 'mcp_servers' || h.key[1] !== name) return []
    let end = headers[n + 1]?.line ?? lines.length
    // Blank lines and comments just above the next table are that table's, not ours.
    while (end > h.line + 1 && /^\s*(#.*)?$/.test(lines[end - 1]!)) end--
    return [{start: h.line, end}]
  })
}

/** `a."b.c".d` → ['a', 'b.c', 'd'] (quoted parts may hold dots). */
function keySegments(key: string): string[] {
  const out: string[] = []
  for (const m of key.matchAll(/\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*(?:\.|$)/g))
    out.push(m[1] ?? m[2] ?? m[3] ?? '')
  return out
}
