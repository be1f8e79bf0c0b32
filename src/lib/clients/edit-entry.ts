import {isDeepStrictEqual} from 'node:util'
import {ToolgateError} from '../errors.ts'
import type {ClientDef} from './catalog.ts'
import {readConfigText, resolveConfigPath, withFileLock, writeConfigText} from './config-file.ts'
import {editChecked, openServersDoc} from './servers-doc.ts'

export type EntryChange = 'added' | 'updated' | 'unchanged' | 'removed' | 'absent'

/**
 * Sets (or, with `value` undefined, removes) one server entry in one client config file, under
 * the file's lock. `owned` says whether toolgate wrote the entry that is there now: an entry of
 * the same name that toolgate did not write is never replaced without `force`.
 * `expect`, when given, is what the entry must still be for the change to go ahead (a port move
 * leaves an entry the user has edited since alone).
 */
export async function editEntry(
  client: ClientDef,
  file: string,
  name: string,
  value: Record<string, unknown> | undefined,
  options: {owned: boolean; force?: boolean; expect?: unknown},
): Promise<{change: EntryChange; path: string}> {
  const real = await resolveConfigPath(file)
  return withFileLock(real, async () => {
    const config = await readConfigText(real)
    const doc = openServersDoc(client, config.path, config.text)
    // Own entries only: "constructor" or "toString" are names a user may choose.
    const existing = Object.hasOwn(doc.entries, name) ? doc.entries[name] : undefined
    const done = (change: EntryChange) => ({change, path: config.path})
    if (value === undefined && existing === undefined) return done('absent')
    if (value !== undefined && isDeepStrictEqual(existing, value)) return done('unchanged')
    if (options.expect !== undefined && !isDeepStrictEqual(existing, options.expect))
      return done('unchanged')
    if (existing !== undefined && !options.owned && !options.force)
      throw new ToolgateError(
        'ERR_CONFLICT',
        `${config.path}: ${client.name} already has a server "${name}" that toolgate did not write; choose another --name, or --force to replace it`,
      )
    await writeConfigText(config, editChecked(doc, client, config.path, name, value))
    if (value === undefined) return done('removed')
    return done(existing === undefined ? 'added' : 'updated')
  })
}
