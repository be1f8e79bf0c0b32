import type {Sql} from 'postgres'
import type {OfficialMeta, PublishedInput, PublishedVersion} from '../types.ts'

/**
 * `published_versions` on PostgreSQL (migration 2), as sqlite/published.ts: the primary key
 * decides a race between two replicas publishing one version; the other gets `exists`.
 */
export async function publishVersionPg(
  sql: Sql,
  source: string,
  v: PublishedInput,
  now: Date,
): Promise<'created' | 'exists'> {
  const at = now.toISOString()
  const rows = await sql`
    INSERT INTO published_versions (source, name, version, server_json, status, published_at,
      updated_at, published_by)
    VALUES (${source}, ${v.name}, ${v.version}, ${v.serverJson}, 'active', ${at}, ${at},
      ${v.publishedBy})
    ON CONFLICT DO NOTHING RETURNING name`
  return rows.length === 1 ? 'created' : 'exists'
}

export async function setPublishedStatusPg(
  sql: Sql,
  source: string,
  name: string,
  version: string,
  status: OfficialMeta['status'],
  now: Date,
): Promise<boolean> {
  const rows = await sql`
    UPDATE published_versions SET status = ${status},
      updated_at = CASE WHEN status = ${status} THEN updated_at ELSE ${now.toISOString()} END
    WHERE source = ${source} AND name = ${name} AND version = ${version} RETURNING name`
  return rows.length === 1
}

export async function publishedVersionsPg(sql: Sql, source: string): Promise<PublishedVersion[]> {
  const rows = await sql<
    {
      name: string
      version: string
      server_json: string
      status: string
      published_at: string
      updated_at: string
      published_by: string
    }[]
  >`
    SELECT name, version, server_json, status, published_at, updated_at, published_by
    FROM published_versions WHERE source = ${source} ORDER BY name, version`
  return rows.map((r) => ({
    name: r.name,
    version: r.version,
    serverJson: r.server_json,
    status: r.status as OfficialMeta['status'],
    publishedAt: r.published_at,
    updatedAt: r.updated_at,
    publishedBy: r.published_by,
  }))
}
