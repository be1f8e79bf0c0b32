import type {OfficialMeta, PublishedInput, PublishedVersion} from '../types.ts'
import type {StoreConnections} from './connections.ts'

/**
 * The `published_versions` table of the embedded store (migration 3): what was published to each
 * managed source. Kept when a source leaves the configuration (retainSources does not touch it), so
 * a configuration typo never loses published data; it is simply not served until the source is back.
 */
export function publishVersion(
  c: StoreConnections,
  source: string,
  v: PublishedInput,
  now: Date,
): 'created' | 'exists' {
  const at = now.toISOString()
  let created = false
  c.syncTransaction(() => {
    // The primary key decides, inside the write lock: two publishes of one version cannot both win.
    const r = c
      .wstmt(
        'pub_ins',
        'INSERT OR IGNORE INTO published_versions (source, name, version, server_json, status, ' +
          "published_at, updated_at, published_by) VALUES (?, ?, ?, ?, 'active', ?, ?, ?)",
      )
      .run(source, v.name, v.version, v.serverJson, at, at, v.publishedBy)
    created = r.changes === 1
  })
  return created ? 'created' : 'exists'
}

export function setPublishedStatus(
  c: StoreConnections,
  source: string,
  name: string,
  version: string,
  status: OfficialMeta['status'],
  now: Date,
): boolean {
  let found = false
  c.syncTransaction(() => {
    const r = c
      .wstmt(
        'pub_status',
        'UPDATE published_versions SET status = ?, updated_at = CASE WHEN status = ? ' +
          'THEN updated_at ELSE ? END WHERE source = ? AND name = ? AND version = ?',
      )
      .run(status, status, now.toISOString(), source, name, version)
    found = r.changes === 1
  })
  return found
}

export function publishedVersions(c: StoreConnections, source: string): PublishedVersion[] {
  const rows = c
    .wstmt(
      'pub_all',
      'SELECT name, version, server_json, status, published_at, updated_at, published_by ' +
        'FROM published_versions WHERE source = ? ORDER BY name, version',
    )
    .all(source)
  return rows.map((r) => ({
    name: String(r.name),
    version: String(r.version),
    serverJson: String(r.server_json),
    status: String(r.status) as OfficialMeta['status'],
    publishedAt: String(r.published_at),
    updatedAt: String(r.updated_at),
    publishedBy: String(r.published_by),
  }))
}
