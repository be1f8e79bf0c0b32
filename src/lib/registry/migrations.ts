import type {DatabaseSync} from 'node:sqlite'
import {traitsSql} from './traits.ts'

/**
 * Versioned schema of the embedded store. Each migration runs once, in order, inside a transaction
 * that also records it in `schema_migrations`; applied migrations are never edited, new ones are
 * appended. The SQL stays in the common subset (plain tables, b-tree indexes, window functions) so a
 * PostgreSQL backend can mirror it; the one exception is the search index (FTS5, migration 2).
 *
 * Layout:
 * - `source_versions`: what each source holds, one row per (source, name, version), with the
 *   server.json text (official `_meta` stripped) and the official metadata as columns.
 * - `registry_sources`: each registry's ordered source list (position 0 wins, contract §1).
 * - `registry_entries`: the effective rows of each registry, materialised at sync time, keyed
 *   (registry, name, version) so that list pages are index range scans (keyset pagination).
 */
export interface Migration {
  version: number
  description: string
  sql: string
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'source data, registry definitions, materialised registry entries',
    sql: `
      CREATE TABLE source_versions (
        id INTEGER PRIMARY KEY,
        source TEXT NOT NULL,
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        server_json TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        status TEXT NOT NULL,
        published_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        updated_ms INTEGER NOT NULL,
        is_latest INTEGER NOT NULL,
        search_text TEXT NOT NULL,
        UNIQUE (source, name, version)
      );
      CREATE INDEX source_versions_name ON source_versions (name, source);

      CREATE TABLE registries (
        name TEXT PRIMARY KEY
      );
      CREATE TABLE registry_sources (
        registry TEXT NOT NULL,
        position INTEGER NOT NULL,
        source TEXT NOT NULL,
        PRIMARY KEY (registry, position)
      );
      CREATE INDEX registry_sources_source ON registry_sources (source);

      CREATE TABLE registry_entries (
        registry TEXT NOT NULL,
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        entry_id INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL,
        is_latest INTEGER NOT NULL,
        search_text TEXT NOT NULL,
        PRIMARY KEY (registry, name, version)
      ) WITHOUT ROWID;
      CREATE INDEX registry_entries_version ON registry_entries (registry, version, name);
      CREATE INDEX registry_entries_latest ON registry_entries (registry, name) WHERE is_latest = 1;
    `,
  },
  {
    version: 2,
    description: 'trigram index for substring search (sqlite/search.ts)',
    // SQLite-only (FTS5): the PostgreSQL mirror of this is a pg_trgm GIN index. Contentless: the
    // text already lives in source_versions; triggers keep the index in step with every write path.
    sql: `
      CREATE VIRTUAL TABLE search_index USING fts5(
        search_text, tokenize = 'trigram case_sensitive 1', detail = none,
        content = '', contentless_delete = 1
      );
      INSERT INTO search_index (rowid, search_text) SELECT id, search_text FROM source_versions;
      CREATE TRIGGER source_versions_search_insert AFTER INSERT ON source_versions BEGIN
        INSERT INTO search_index (rowid, search_text) VALUES (new.id, new.search_text);
      END;
      CREATE TRIGGER source_versions_search_delete AFTER DELETE ON source_versions BEGIN
        DELETE FROM search_index WHERE rowid = old.id;
      END;
      CREATE TRIGGER source_versions_search_update AFTER UPDATE OF id, search_text ON source_versions
      WHEN old.id <> new.id OR old.search_text <> new.search_text BEGIN
        DELETE FROM search_index WHERE rowid = old.id;
        INSERT INTO search_index (rowid, search_text) VALUES (new.id, new.search_text);
      END;
    `,
  },
  {
    version: 3,
    description: 'versions published to managed sources (registry-publish/)',
    // The authoritative copy of what was published: a managed source's sync reads it back like a
    // file (sources/managed-source.ts), so publishing reuses the one write path to registry_entries.
    sql: `
      CREATE TABLE published_versions (
        source TEXT NOT NULL,
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        server_json TEXT NOT NULL,
        status TEXT NOT NULL,
        published_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        published_by TEXT NOT NULL,
        PRIMARY KEY (source, name, version)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 4,
    description: 'traits of each version for the list filters (traits.ts)',
    // Computed in JS when a version is stored; rows stored before are computed here, once.
    sql: `
      ALTER TABLE source_versions ADD COLUMN traits INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE registry_entries ADD COLUMN traits INTEGER NOT NULL DEFAULT 0;
      UPDATE source_versions SET traits = ${traitsSql(
        (array, field, value) =>
          `(json_type(server_json, '$.${array}') = 'array' AND EXISTS (SELECT 1 FROM ` +
          `json_each(server_json, '$.${array}') e WHERE e.type = 'object' AND ` +
          `json_extract(e.value, '$.${field}') = '${value}'))`,
        (array) =>
          `(json_type(server_json, '$.${array}') = 'array' AND json_array_length(server_json, '$.${array}') > 0)`,
      )};
      UPDATE registry_entries SET traits =
        (SELECT sv.traits FROM source_versions sv WHERE sv.id = registry_entries.entry_id);
    `,
  },
]

/** Applies pending migrations in order, each in its own transaction. Safe to run on every start. */
export function runMigrations(db: DatabaseSync, migrations: readonly Migration[]): number[] {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, ' +
      'description TEXT NOT NULL, applied_at TEXT NOT NULL)',
  )
  const applied = new Set(
    db
      .prepare('SELECT version FROM schema_migrations')
      .all()
      .map((r) => Number(r.version)),
  )
  const ran: number[] = []
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    if (applied.has(m.version)) continue
    db.exec('BEGIN IMMEDIATE')
    try {
      // Re-check inside the write lock: another process may have migrated meanwhile.
      const done = db
        .prepare('SELECT 1 AS x FROM schema_migrations WHERE version = ?')
        .get(m.version)
      if (!done) {
        db.exec(m.sql)
        db.prepare(
          'INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, ?)',
        ).run(m.version, m.description, new Date().toISOString())
        ran.push(m.version)
      }
      db.exec('COMMIT')
    } catch (err) {
      db.exec('ROLLBACK')
      throw err
    }
  }
  return ran
}
