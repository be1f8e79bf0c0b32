import type {Sql, TransactionSql} from 'postgres'
import {ToolgateError} from '../../errors.ts'
import type {RegistryDefinition} from '../types.ts'
import {bumpGeneration, rebuildSql, WRITE_LOCK_KEY} from './sync.ts'

/**
 * Registry definitions and retained sources on PostgreSQL (as ../sqlite/registries.ts). Every
 * replica declares its configuration at start; an unchanged definition writes nothing, so replicas
 * sharing one configuration never rebuild each other's registries. Returns the new generation when
 * something changed.
 */
export async function setRegistriesPg(
  sql: Sql,
  registries: RegistryDefinition[],
): Promise<{map: Map<string, string[]>; generation: number | undefined}> {
  const wanted = new Map<string, string[]>()
  for (const r of registries) {
    if (wanted.has(r.name)) {
      throw new ToolgateError('ERR_CONFIG_INVALID', `registries: "${r.name}" is defined twice`)
    }
    wanted.set(r.name, [...r.sources])
  }
  const generation = await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${WRITE_LOCK_KEY})`
    const current = await loadRegistriesFrom(tx)
    let changed = false
    for (const name of current.keys()) {
      if (wanted.has(name)) continue
      await tx`DELETE FROM registries WHERE name = ${name}`
      await tx`DELETE FROM registry_sources WHERE registry = ${name}`
      await tx`DELETE FROM registry_entries WHERE registry = ${name}`
      changed = true
    }
    for (const [name, sources] of wanted) {
      const have = current.get(name)
      if (have && have.length === sources.length && have.every((s, i) => s === sources[i])) continue
      await tx`INSERT INTO registries (name) VALUES (${name}) ON CONFLICT DO NOTHING`
      await tx`DELETE FROM registry_sources WHERE registry = ${name}`
      for (const [i, s] of sources.entries())
        await tx`INSERT INTO registry_sources (registry, position, source) VALUES (${name}, ${i}, ${s})`
      await tx`DELETE FROM registry_entries WHERE registry = ${name}`
      await tx.unsafe(rebuildSql('all'), [name])
      changed = true
    }
    return changed ? bumpGeneration(tx) : undefined
  })
  return {map: wanted, generation}
}

export async function loadRegistriesFrom(
  sql: Sql | TransactionSql,
): Promise<Map<string, string[]>> {
  const map = new Map<string, string[]>()
  for (const r of await sql<{name: string}[]>`SELECT name FROM registries ORDER BY name`)
    map.set(r.name, [])
  const rows = await sql<{registry: string; source: string}[]>`
    SELECT registry, source FROM registry_sources ORDER BY registry, position`
  for (const r of rows) map.get(r.registry)?.push(r.source)
  return map
}

/** Drops the data of every source not named, rebuilding the registries they fed. */
export async function retainSourcesPg(sql: Sql, sources: string[]): Promise<number | undefined> {
  const keep = new Set(sources)
  const present = await sql<{source: string}[]>`SELECT DISTINCT source FROM source_versions`
  const drop = present.map((r) => r.source).filter((s) => !keep.has(s))
  if (drop.length === 0) return undefined
  return sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${WRITE_LOCK_KEY})`
    await tx`DELETE FROM source_versions WHERE source = ANY(${sql.array(drop)}::text[])`
    await tx`DELETE FROM source_sync WHERE source = ANY(${sql.array(drop)}::text[])`
    const fed = await tx<{registry: string}[]>`
      SELECT DISTINCT registry FROM registry_sources WHERE source = ANY(${sql.array(drop)}::text[])`
    for (const {registry} of fed) {
      await tx`DELETE FROM registry_entries WHERE registry = ${registry}`
      await tx.unsafe(rebuildSql('all'), [registry])
    }
    return bumpGeneration(tx)
  })
}
