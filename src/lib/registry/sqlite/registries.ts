import {ToolgateError} from '../../errors.ts'
import type {RegistryDefinition} from '../types.ts'
import type {StoreConnections} from './connections.ts'
import {rebuildRegistry} from './rebuild.ts'

/**
 * Registry definitions (which sources feed which registry, in order) and dropping sources that
 * left the configuration. Each change rebuilds the affected registries in the same transaction.
 */
export function setRegistries(c: StoreConnections, registries: RegistryDefinition[]): void {
  const wanted = new Map<string, string[]>()
  for (const r of registries) {
    if (wanted.has(r.name)) {
      throw new ToolgateError('ERR_CONFIG_INVALID', `registries: "${r.name}" is defined twice`)
    }
    wanted.set(r.name, [...r.sources])
  }
  c.syncTransaction(() => {
    for (const name of c.registries.keys()) {
      if (wanted.has(name)) continue
      c.wstmt('reg_del', 'DELETE FROM registries WHERE name = ?').run(name)
      c.wstmt('reg_src_del', 'DELETE FROM registry_sources WHERE registry = ?').run(name)
      c.wstmt('reg_entries_del', 'DELETE FROM registry_entries WHERE registry = ?').run(name)
    }
    for (const [name, sources] of wanted) {
      const current = c.registries.get(name)
      if (current && sameList(current, sources)) continue
      c.wstmt('reg_ins', 'INSERT OR IGNORE INTO registries (name) VALUES (?)').run(name)
      c.wstmt('reg_src_del', 'DELETE FROM registry_sources WHERE registry = ?').run(name)
      const ins = c.wstmt(
        'reg_src_ins',
        'INSERT INTO registry_sources (registry, position, source) VALUES (?, ?, ?)',
      )
      sources.forEach((s, i) => ins.run(name, i, s))
      rebuildRegistry(c, name)
    }
  })
  c.registries = wanted
}

/** Reads the committed registry definitions into `c.registries` (on open). */
export function loadRegistries(c: StoreConnections): void {
  const map = new Map<string, string[]>()
  for (const r of c.stmt('reg_all', 'SELECT name FROM registries ORDER BY name').all()) {
    map.set(String(r.name), [])
  }
  const rows = c
    .stmt(
      'reg_src_all',
      'SELECT registry, source FROM registry_sources ORDER BY registry, position',
    )
    .all()
  for (const r of rows) map.get(String(r.registry))?.push(String(r.source))
  c.registries = map
}

/** Drops the data of every source not named, rebuilding the registries they fed. */
export function retainSources(c: StoreConnections, sources: string[]): void {
  const keep = new Set(sources)
  const present = c
    .wstmt('src_names', 'SELECT DISTINCT source FROM source_versions')
    .all()
    .map((r) => String(r.source))
  const drop = present.filter((s) => !keep.has(s))
  if (drop.length === 0) return
  c.syncTransaction(() => {
    for (const s of drop) {
      c.wstmt('src_drop', 'DELETE FROM source_versions WHERE source = ?').run(s)
    }
    for (const [registry, list] of c.registries) {
      if (list.some((s) => drop.includes(s))) rebuildRegistry(c, registry)
    }
  })
}

function sameList(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i])
}
