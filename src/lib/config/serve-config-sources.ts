import type {RegistryDefinition, SourceConfig} from '../registry/types.ts'
import {Checker, isDnsLabel, join} from './checker.ts'
import {parseDuration} from './duration.ts'
import {absPath, checkUrl} from './config-fields.ts'
import {checkGit} from './serve-config-git.ts'

/** `sources` and `registries` of the serve configuration (contract §1 "Configuration file shape"). */
export const DEFAULT_REGISTRY = 'default'

export function checkSources(c: Checker, value: unknown, baseDir: string): SourceConfig[] {
  const list = c.array(value, 'sources')
  if (!list) return []
  const out: SourceConfig[] = []
  const seen = new Set<string>()
  list.forEach((item, i) => {
    const p = `sources[${i}]`
    const o = c.object(item, p, ['name', 'file', 'api', 'managed', 'git', 'syncPolicy', 'filter'])
    if (!o) return
    const name = checkUniqueLabel(c, o.name, join(p, 'name'), seen, 'source')
    const syncIntervalMs = checkSyncPolicy(c, o.syncPolicy, join(p, 'syncPolicy'))
    const filter = checkFilter(c, o.filter, join(p, 'filter'))
    const common = {
      name: name ?? '',
      ...(syncIntervalMs !== undefined ? {syncIntervalMs} : {}),
      ...(filter ? {filter} : {}),
    }
    const kinds = [o.file, o.api, o.managed, o.git].filter((k) => k !== undefined).length
    if (kinds !== 1) {
      c.add(p, 'needs exactly one of "file", "api", "managed" or "git"')
      return
    }
    if (o.git !== undefined) {
      const git = checkGit(c, o.git, join(p, 'git'), baseDir)
      // Nothing tells us a repository moved: it is polled, so the interval is required.
      if (syncIntervalMs === undefined)
        c.add(join(p, 'syncPolicy.interval'), 'is required for a git source')
      if (git) out.push({kind: 'git', ...git, ...common})
      return
    }
    if (o.managed !== undefined) {
      // Published to through the API (docs/registry-publish.md); nothing to configure yet. A
      // filter would let a publish be stored and never served: what is published is the filter.
      if (o.filter !== undefined) c.add(join(p, 'filter'), 'does not apply to a managed source')
      if (c.object(o.managed, join(p, 'managed'), [])) out.push({kind: 'managed', ...common})
      return
    }
    if (o.file !== undefined) {
      const f = c.object(o.file, join(p, 'file'), ['path', 'url'])
      if (!f) return
      if ((f.path === undefined) === (f.url === undefined)) {
        c.add(join(p, 'file'), 'needs exactly one of "path" or "url"')
        return
      }
      if (f.path !== undefined) {
        const fp = c.string(f.path, join(p, 'file.path'), {required: true})
        if (fp !== undefined) out.push({kind: 'file', path: absPath(fp, baseDir), ...common})
      } else {
        const url = checkUrl(c, f.url, join(p, 'file.url'), {required: true})
        // A URL cannot be watched: it is polled, so the interval is required.
        if (syncIntervalMs === undefined)
          c.add(join(p, 'syncPolicy.interval'), 'is required for a file source with a url')
        if (url !== undefined) out.push({kind: 'file', url, ...common})
      }
    } else {
      const a = c.object(o.api, join(p, 'api'), ['endpoint'])
      if (!a) return
      const endpoint = checkUrl(c, a.endpoint, join(p, 'api.endpoint'), {required: true})
      if (syncIntervalMs === undefined)
        c.add(join(p, 'syncPolicy.interval'), 'is required for an api source')
      if (endpoint !== undefined) out.push({kind: 'api', endpoint, ...common})
    }
  })
  return out
}

function checkSyncPolicy(c: Checker, value: unknown, path: string): number | undefined {
  if (value === undefined) return undefined
  const o = c.object(value, path, ['interval'])
  if (!o) return undefined
  const text = c.string(o.interval, join(path, 'interval'), {required: true})
  if (text === undefined) return undefined
  try {
    return parseDuration(text, join(path, 'interval'))
  } catch (err) {
    c.add(join(path, 'interval'), (err as Error).message.replace(/^[^:]*: /, ''))
    return undefined
  }
}

function checkFilter(c: Checker, value: unknown, path: string): SourceConfig['filter'] | undefined {
  if (value === undefined) return undefined
  const o = c.object(value, path, ['names'])
  if (!o || o.names === undefined) return undefined
  const n = c.object(o.names, join(path, 'names'), ['include', 'exclude'])
  if (!n) return undefined
  const include = c.stringList(n.include, join(path, 'names.include'))
  const exclude = c.stringList(n.exclude, join(path, 'names.exclude'))
  return {names: {...(include ? {include} : {}), ...(exclude ? {exclude} : {})}}
}

export function checkRegistries(
  c: Checker,
  value: unknown,
  sources: SourceConfig[],
): RegistryDefinition[] {
  const list = c.array(value, 'registries')
  // Absent: one `default` registry fed by every source in the order listed (empty without sources).
  if (!list) return [{name: DEFAULT_REGISTRY, sources: sources.map((s) => s.name)}]
  const known = new Set(sources.map((s) => s.name))
  const seen = new Set<string>()
  const out: RegistryDefinition[] = []
  list.forEach((item, i) => {
    const p = `registries[${i}]`
    const o = c.object(item, p, ['name', 'sources'])
    if (!o) return
    const name = checkUniqueLabel(c, o.name, join(p, 'name'), seen, 'registry')
    const refs = c.stringList(o.sources, join(p, 'sources')) ?? []
    if (o.sources === undefined) c.add(join(p, 'sources'), 'is required (a list of source names)')
    const dupes = new Set<string>()
    refs.forEach((ref, j) => {
      if (!known.has(ref)) c.add(`${p}.sources[${j}]`, `unknown source "${ref}"`)
      if (dupes.has(ref)) c.add(`${p}.sources[${j}]`, `source "${ref}" listed twice`)
      dupes.add(ref)
    })
    if (name !== undefined) out.push({name, sources: refs})
  })
  // A write is authorized for the registry it is sent to: a managed source in two registries
  // would let a publish permitted in one appear in the other.
  for (const source of sources) {
    if (source.kind !== 'managed') continue
    const holders = out.filter((r) => r.sources.includes(source.name)).map((r) => r.name)
    if (holders.length > 1)
      c.add(
        'registries',
        `managed source "${source.name}" is in registries ${holders.map((h) => `"${h}"`).join(' and ')}: a managed source belongs to one registry`,
      )
  }
  return out
}

/** A required name that is a DNS label and unique among its kind (sources, registries). */
function checkUniqueLabel(
  c: Checker,
  value: unknown,
  path: string,
  seen: Set<string>,
  kind: 'source' | 'registry',
): string | undefined {
  const name = c.string(value, path, {required: true})
  if (name === undefined) return undefined
  if (!isDnsLabel(name))
    c.add(path, `"${name}" must be a DNS label (lower-case letters, digits, -; at most 63)`)
  else if (seen.has(name)) c.add(path, `duplicate ${kind} name "${name}"`)
  seen.add(name)
  return name
}
