import {BATCH, type StoreConnections} from './connections.ts'

/**
 * Materialises a registry's effective rows (`registry_entries`) from its sources' versions.
 * Precedence (contract §1): a name present in several sources of a registry is served, with all
 * its versions, from the source listed first. All of these run inside a write transaction.
 */
export function rebuildRegistry(c: StoreConnections, registry: string): void {
  c.wstmt('re_del_all', 'DELETE FROM registry_entries WHERE registry = ?').run(registry)
  c.wstmt('re_ins_all', rebuildSql('')).run(registry)
}

/** As rebuildRegistry, one range of names at a time (about BATCH source rows each). */
export async function rebuildRegistryInChunks(
  c: StoreConnections,
  registry: string,
  pause: () => Promise<void>,
): Promise<void> {
  const boundary = c.wstmt(
    're_boundary',
    'SELECT name FROM source_versions WHERE name > ? ORDER BY name LIMIT 1 OFFSET ?',
  )
  const delUpTo = c.wstmt(
    're_del_upto',
    'DELETE FROM registry_entries WHERE registry = ? AND name > ? AND name <= ?',
  )
  const delRest = c.wstmt(
    're_del_rest',
    'DELETE FROM registry_entries WHERE registry = ? AND name > ?',
  )
  const insUpTo = c.wstmt('re_ins_upto', rebuildSql(' AND sv.name > ? AND sv.name <= ?'))
  const insRest = c.wstmt('re_ins_rest', rebuildSql(' AND sv.name > ?'))
  let after = ''
  for (;;) {
    const edge = boundary.get(after, BATCH)?.name as string | undefined
    if (edge === undefined) {
      delRest.run(registry, after)
      insRest.run(registry, after)
      return
    }
    delUpTo.run(registry, after, edge)
    insUpTo.run(registry, after, edge)
    after = edge
    await pause()
  }
}

/** As rebuildRegistry, for one name. */
export function rebuildName(c: StoreConnections, registry: string, name: string): void {
  c.wstmt('re_del_name', 'DELETE FROM registry_entries WHERE registry = ? AND name = ?').run(
    registry,
    name,
  )
  c.wstmt(
    're_ins_name',
    'INSERT INTO registry_entries (registry, name, version, entry_id, updated_ms, is_latest, search_text, traits) ' +
      'SELECT rs.registry, sv.name, sv.version, sv.id, sv.updated_ms, sv.is_latest, sv.search_text, sv.traits ' +
      'FROM source_versions sv JOIN registry_sources rs ON rs.source = sv.source ' +
      'WHERE rs.registry = ? AND sv.name = ? AND rs.position = (' +
      '  SELECT MIN(rs2.position) FROM source_versions sv2 ' +
      '  JOIN registry_sources rs2 ON rs2.source = sv2.source ' +
      '  WHERE rs2.registry = ? AND sv2.name = ?)',
  ).run(registry, name, registry, name)
}

// Recomputes a registry's effective rows, for all names or those matching `names` (a condition on
// sv.name with its parameters after the registry's).
function rebuildSql(names: string): string {
  return (
    'INSERT INTO registry_entries (registry, name, version, entry_id, updated_ms, is_latest, search_text, traits) ' +
    'SELECT registry, name, version, id, updated_ms, is_latest, search_text, traits FROM (' +
    '  SELECT rs.registry AS registry, sv.name AS name, sv.version AS version, sv.id AS id, ' +
    '    sv.updated_ms AS updated_ms, sv.is_latest AS is_latest, sv.search_text AS search_text, ' +
    '    sv.traits AS traits, ' +
    '    rs.position AS position, MIN(rs.position) OVER (PARTITION BY sv.name) AS best ' +
    '  FROM source_versions sv JOIN registry_sources rs ON rs.source = sv.source ' +
    `  WHERE rs.registry = ?${names}` +
    ') WHERE position = best'
  )
}
