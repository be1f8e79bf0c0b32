import type {ReservedSql, Sql} from 'postgres'
import type {Migration} from '../migrations.ts'
import {traitsOf} from '../traits.ts'
import type {ServerJson} from '../types.ts'

/**
 * Versioned schema of the PostgreSQL store, mirroring the SQLite one (../migrations.ts) so both
 * answer identically. Differences, each for a reason:
 * - names and versions are `COLLATE "C"`: byte order, as SQLite's BINARY, so pages and cursors
 *   follow the same order on both stores whatever the database's default collation;
 * - `registry_entries.search_text` has a pg_trgm GIN index, so `search=` is an index lookup for
 *   terms of 3+ characters (the SQLite store's substring index is FTS5 trigram, issue #19);
 * - `store_state.generation` counts committed changes (the response caches of every replica key on
 *   it), and `source_sync` holds each source's sync lease and last success (coordination).
 */
/** A migration with a step in JS after its SQL, in the same transaction. */
export interface PgMigration extends Migration {
  after?: (sql: ReservedSql) => Promise<void>
}

export const PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    description: 'source data, registry definitions, materialised registry entries, sync leases',
    sql: `
      CREATE EXTENSION IF NOT EXISTS pg_trgm;
      CREATE TABLE source_versions (
        id BIGSERIAL PRIMARY KEY,
        source TEXT COLLATE "C" NOT NULL,
        name TEXT COLLATE "C" NOT NULL,
        version TEXT COLLATE "C" NOT NULL,
        server_json TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        status TEXT NOT NULL,
        published_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        updated_ms BIGINT NOT NULL,
        is_latest BOOLEAN NOT NULL,
        search_text TEXT NOT NULL,
        UNIQUE (source, name, version)
      );
      CREATE INDEX source_versions_name ON source_versions (name, source);

      CREATE TABLE registries (name TEXT COLLATE "C" PRIMARY KEY);
      CREATE TABLE registry_sources (
        registry TEXT COLLATE "C" NOT NULL,
        position INTEGER NOT NULL,
        source TEXT COLLATE "C" NOT NULL,
        PRIMARY KEY (registry, position)
      );
      CREATE INDEX registry_sources_source ON registry_sources (source);

      CREATE TABLE registry_entries (
        registry TEXT COLLATE "C" NOT NULL,
        name TEXT COLLATE "C" NOT NULL,
        version TEXT COLLATE "C" NOT NULL,
        entry_id BIGINT NOT NULL,
        updated_ms BIGINT NOT NULL,
        is_latest BOOLEAN NOT NULL,
        search_text TEXT NOT NULL,
        PRIMARY KEY (registry, name, version)
      );
      CREATE INDEX registry_entries_version ON registry_entries (registry, version, name);
      CREATE INDEX registry_entries_latest ON registry_entries (registry, name) WHERE is_latest;
      CREATE INDEX registry_entries_search ON registry_entries USING gin (search_text gin_trgm_ops);

      CREATE TABLE store_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        generation BIGINT NOT NULL
      );
      INSERT INTO store_state (id, generation) VALUES (1, 1);

      CREATE TABLE source_sync (
        source TEXT COLLATE "C" PRIMARY KEY,
        lease_holder TEXT,
        lease_token BIGINT NOT NULL DEFAULT 0,
        lease_expires_at TIMESTAMPTZ,
        last_started_at TIMESTAMPTZ,
        last_success_at TIMESTAMPTZ,
        syncs BIGINT NOT NULL DEFAULT 0
      );
    `,
  },
  {
    version: 2,
    description: 'versions published to managed sources (registry-publish/)',
    sql: `
      CREATE TABLE published_versions (
        source TEXT COLLATE "C" NOT NULL,
        name TEXT COLLATE "C" NOT NULL,
        version TEXT COLLATE "C" NOT NULL,
        server_json TEXT NOT NULL,
        status TEXT NOT NULL,
        published_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        published_by TEXT NOT NULL,
        PRIMARY KEY (source, name, version)
      );
    `,
  },
  {
    version: 3,
    description: 'traits of each version for the list filters (traits.ts)',
    // Rows stored before are computed in JS, not with `::jsonb`: PostgreSQL's jsonb refuses
    // \u0000 and lone surrogates, which a stored document (TEXT) may hold, and one such row
    // would stop every replica from starting.
    sql: `
      ALTER TABLE source_versions ADD COLUMN traits INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE registry_entries ADD COLUMN traits INTEGER NOT NULL DEFAULT 0;
    `,
    after: backfillTraits,
  },
]

// Any constant works; it only has to differ from other applications' keys on the same database.
export const MIGRATION_LOCK_KEY = 0x746f6f6c // "tool"

/**
 * Applies pending migrations under a session advisory lock: replicas starting together queue on
 * the lock, and the ones after the first find nothing left to do. Each migration commits with its
 * row in `schema_migrations`. Returns the versions this call applied.
 */
export async function runPgMigrations(
  sql: Sql,
  migrations: readonly PgMigration[] = PG_MIGRATIONS,
): Promise<number[]> {
  const reserved = await sql.reserve()
  try {
    await reserved`SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY})`
    try {
      await reserved`CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY,
        description TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`
      const rows = await reserved<{version: number}[]>`SELECT version FROM schema_migrations`
      const applied = new Set(rows.map((r) => Number(r.version)))
      const ran: number[] = []
      for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
        if (applied.has(m.version)) continue
        await reserved.unsafe('BEGIN')
        try {
          await reserved.unsafe(m.sql)
          if (m.after) await m.after(reserved)
          await reserved`INSERT INTO schema_migrations (version, description)
            VALUES (${m.version}, ${m.description})`
          await reserved.unsafe('COMMIT')
        } catch (err) {
          await reserved.unsafe('ROLLBACK').catch(() => undefined)
          throw err
        }
        ran.push(m.version)
      }
      return ran
    } finally {
      await reserved`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY})`.catch(() => undefined)
    }
  } finally {
    reserved.release()
  }
}

/** Fills `traits` of the rows stored before migration 3, a page of ids at a time. */
async function backfillTraits(sql: ReservedSql): Promise<void> {
  let after = 0
  for (;;) {
    const rows = await sql<{id: string; server_json: string}[]>`
      SELECT id, server_json FROM source_versions WHERE id > ${after} ORDER BY id LIMIT 2000`
    if (rows.length === 0) break
    const ids = rows.map((r) => String(r.id))
    const traits = rows.map((r) => {
      try {
        return traitsOf(JSON.parse(r.server_json) as ServerJson)
      } catch {
        return 0
      }
    })
    await sql`UPDATE source_versions sv SET traits = t.traits
      FROM unnest(${sql.array(ids)}::bigint[], ${sql.array(traits)}::int[]) AS t(id, traits)
      WHERE sv.id = t.id`
    after = Number(ids.at(-1))
  }
  await sql`UPDATE registry_entries re SET traits = sv.traits FROM source_versions sv
    WHERE sv.id = re.entry_id AND re.traits <> sv.traits`
}
