import {OFFICIAL_META_KEY, type ServerEntry} from '../registry/types.ts'

/**
 * Human output of the registry commands. Everything shown comes from a registry, which may be
 * anyone's: control characters (terminal escape sequences that could rewrite the screen or the
 * window title) are replaced before anything reaches the terminal.
 */
const CONTROL =
  // eslint-disable-next-line no-control-regex -- control characters are exactly what we replace
  /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]/g

export function clean(text: unknown, max = 500): string {
  const s =
    typeof text === 'string' ? text : text === undefined || text === null ? '' : String(text)
  const flat = s.replace(CONTROL, ' ')
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

/** The transports an entry offers: its packages' and its remotes'. */
export function transportsOf(entry: ServerEntry): string[] {
  const out = new Set<string>()
  for (const p of entry.server.packages ?? []) {
    const t = (p as {transport?: {type?: unknown}}).transport?.type
    if (typeof t === 'string') out.add(t)
  }
  for (const r of entry.server.remotes ?? []) {
    const t = (r as {type?: unknown}).type
    if (typeof t === 'string') out.add(t)
  }
  return [...out].sort()
}

function official(entry: ServerEntry) {
  return entry._meta?.[OFFICIAL_META_KEY]
}

export function tableOf(entries: ServerEntry[]): string {
  const rows = [['NAME', 'VERSION', 'STATUS', 'TRANSPORTS', 'DESCRIPTION']]
  for (const e of entries) {
    rows.push([
      clean(e.server.name, 200),
      clean(e.server.version, 40),
      clean(official(e)?.status ?? '', 12),
      clean(transportsOf(e).join(','), 60) || '-',
      clean(e.server.description, 60),
    ])
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  return rows
    .map((r) =>
      r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  '),
    )
    .join('\n')
}

export function detailOf(entry: ServerEntry, versions: ServerEntry[] | undefined): string {
  const s = entry.server
  const o = official(entry)
  const lines = [
    `${clean(s.name, 200)} ${clean(s.version, 60)}${o ? ` (${clean(o.status, 12)}${o.isLatest ? ', latest' : ''})` : ''}`,
  ]
  if (s.title) lines.push(`  title:       ${clean(s.title)}`)
  if (s.description) lines.push(`  description: ${clean(s.description)}`)
  if (s.websiteUrl) lines.push(`  website:     ${clean(s.websiteUrl)}`)
  const repo = s.repository as {url?: unknown} | undefined
  if (repo?.url) lines.push(`  repository:  ${clean(repo.url)}`)
  if (o)
    lines.push(`  published:   ${clean(o.publishedAt, 40)} (updated ${clean(o.updatedAt, 40)})`)
  for (const p of s.packages ?? []) {
    const pkg = p as {
      registryType?: unknown
      identifier?: unknown
      version?: unknown
      transport?: {type?: unknown}
    }
    lines.push(
      `  package:     ${clean(pkg.registryType, 20)} ${clean(pkg.identifier, 200)}` +
        `${pkg.version ? `@${clean(pkg.version, 60)}` : ''} (${clean(pkg.transport?.type, 20)})`,
    )
  }
  for (const r of s.remotes ?? []) {
    const remote = r as {type?: unknown; url?: unknown}
    lines.push(`  remote:      ${clean(remote.type, 20)} ${clean(remote.url)}`)
  }
  if (versions && versions.length > 0) {
    const list = versions.map((v) => {
      const status = official(v)?.status
      return `${clean(v.server.version, 60)}${status && status !== 'active' ? ` (${clean(status, 12)})` : ''}`
    })
    lines.push(`  versions:    ${list.join(', ')}`)
  }
  return lines.join('\n')
}
