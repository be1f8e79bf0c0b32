import type * as SqliteModule from 'node:sqlite'

/**
 * Loads `node:sqlite` once. On Node 22.x loading it emits "ExperimentalWarning: SQLite is an
 * experimental feature…", which would land on a user's terminal at every `serve` start. We drop
 * exactly that warning (type ExperimentalWarning, message mentioning SQLite) while the module loads
 * and forward every other warning unchanged; the hook is removed afterwards.
 */
let loaded: Promise<typeof SqliteModule> | undefined

export function isSqliteExperimentalWarning(warning: unknown, type?: unknown): boolean {
  const name =
    typeof type === 'string'
      ? type
      : type && typeof type === 'object' && 'type' in type
        ? (type as {type?: unknown}).type
        : warning instanceof Error
          ? warning.name
          : undefined
  const message = warning instanceof Error ? warning.message : String(warning)
  return name === 'ExperimentalWarning' && /sqlite/i.test(message)
}

export function loadSqlite(): Promise<typeof SqliteModule> {
  if (loaded) return loaded
  const original = process.emitWarning
  const filtered = function (this: unknown, warning: unknown, ...rest: unknown[]) {
    if (isSqliteExperimentalWarning(warning, rest[0])) return
    return (original as (...a: unknown[]) => void).call(process, warning, ...rest)
  }
  process.emitWarning = filtered as typeof process.emitWarning
  loaded = import('node:sqlite').finally(() => {
    // Only restore when nobody else replaced the hook in the meantime.
    if (process.emitWarning === filtered) process.emitWarning = original
  })
  return loaded
}
