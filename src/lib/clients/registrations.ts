import {readFile} from 'node:fs/promises'
import {join} from 'node:path'
import {xdgDirs} from '../config/xdg.ts'
import {ToolgateError} from '../errors.ts'
import {atomicWriteFile} from '../fs/atomic-write.ts'
import {ensurePrivateDir} from '../fs/private-path.ts'
import type {ClientId, Scope} from './catalog.ts'
import {withFileLock} from './config-file.ts'

/**
 * What `client add` wrote where (`$XDG_STATE_HOME/toolgate/clients.json`, 0600): so that `client
 * remove`, `rm --unregister` and a workload that had to move to another port find exactly the
 * entries toolgate owns, and never touch an entry the user wrote under the same name.
 */
export interface Registration {
  client: ClientId
  scope: Scope
  /** The config file (symlinks followed). */
  file: string
  entry: string
  /** The workload the entry reaches, when the target was a workload name. */
  workload?: string
  via: 'http' | 'stdio'
  /** The URL written, for HTTP entries. */
  url?: string
  sse?: boolean
}

function registrationsFile(env: NodeJS.ProcessEnv): string {
  return join(xdgDirs(env).state, 'clients.json')
}

export async function readRegistrations(env: NodeJS.ProcessEnv): Promise<Registration[]> {
  const file = registrationsFile(env)
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw new ToolgateError('ERR_FILE_UNREADABLE', `${file}: ${(err as Error).message}`)
  }
  try {
    const value = JSON.parse(text) as {registrations?: unknown}
    if (!Array.isArray(value.registrations)) throw new Error('no "registrations" list')
    return value.registrations as Registration[]
  } catch (err) {
    throw new ToolgateError(
      'ERR_STORAGE',
      `${file}: damaged (${(err as Error).message}); move it away to start over (client entries stay in place)`,
    )
  }
}

/** Changes the registrations under a lock, so two toolgates never lose each other's records. */
export async function updateRegistrations(
  env: NodeJS.ProcessEnv,
  change: (list: Registration[]) => Registration[],
): Promise<void> {
  const file = registrationsFile(env)
  ensurePrivateDir(xdgDirs(env).state, xdgDirs(env).state)
  await withFileLock(file, async () => {
    const next = change(await readRegistrations(env))
    await atomicWriteFile(file, JSON.stringify({registrations: next}, null, 2) + '\n')
  })
}

export function sameEntry(a: Registration, b: Pick<Registration, 'client' | 'file' | 'entry'>) {
  return a.client === b.client && a.file === b.file && a.entry === b.entry
}
