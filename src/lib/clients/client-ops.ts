import {ToolgateError, isToolgateError} from '../errors.ts'
import {clientById, type ClientContext, type ClientDef, type Scope} from './catalog.ts'
import {resolveConfigPath} from './config-file.ts'
import {editEntry, type EntryChange} from './edit-entry.ts'
import {
  readRegistrations,
  sameEntry,
  updateRegistrations,
  type Registration,
} from './registrations.ts'
import {planEntry, resolveClientTarget, validateEntryName} from './target.ts'

/**
 * `client add` / `client remove` and the port move of a workload: one result per client, so one
 * client's broken file does not stop the others (the command still fails at the end).
 */

export interface ClientResult {
  client: string
  name: string
  file?: string
  entry: string
  via?: 'http' | 'stdio'
  change: EntryChange | 'skipped' | 'failed'
  note?: string
  error?: ToolgateError
}

export interface AddOptions {
  target: string
  clients: ClientDef[]
  scope: Scope
  via?: 'http' | 'stdio' | undefined
  entry?: string | undefined
  force?: boolean
  ctx: ClientContext
  /** Where toolgate's own state is (workloads, registrations). */
  env: NodeJS.ProcessEnv
}

export async function addToClients(options: AddOptions): Promise<ClientResult[]> {
  const target = await resolveClientTarget(options.target, options.env)
  const name = validateEntryName(options.entry ?? target.entry)
  const owned = await readRegistrations(options.env)
  const results: ClientResult[] = []
  for (const client of options.clients) {
    const base = {client: client.id, name: client.name, entry: name}
    const given = client.file(options.scope, options.ctx)
    if (!given) {
      results.push({
        ...base,
        change: 'skipped',
        note: `${client.name} has no ${options.scope} scope`,
      })
      continue
    }
    const plan = planEntry(client, target, options.via, options.env)
    // Records name the real file (a symlinked config is one file, however it is reached).
    const file = await resolveConfigPath(given)
    try {
      const mine = owned.some((r) => sameEntry(r, {client: client.id, file, entry: name}))
      const {change, path} = await editEntry(client, file, name, plan.value, {
        owned: mine,
        ...(options.force ? {force: true} : {}),
      })
      const record: Registration = {
        client: client.id,
        scope: options.scope,
        file: path,
        entry: name,
        via: plan.via,
        ...(target.workload ? {workload: target.workload} : {}),
        ...(plan.via === 'http' ? {url: target.url, sse: target.sse} : {}),
      }
      await updateRegistrations(options.env, (list) => [
        ...list.filter((r) => !sameEntry(r, record)),
        record,
      ])
      results.push({
        ...base,
        file: path,
        via: plan.via,
        change,
        ...(plan.note ? {note: plan.note} : {}),
      })
    } catch (err) {
      results.push({...base, file, change: 'failed', error: asToolgateError(err)})
    }
  }
  return results
}

export interface RemoveOptions {
  /** A workload name, or an entry name. */
  name: string
  /** `workload`: only the workload's own entries (rm --unregister), never another's entry of that name. */
  by?: 'workload' | 'any'
  clients?: ClientDef[] | undefined
  env: NodeJS.ProcessEnv
}

/** Removes the entries toolgate wrote for a workload (or under an entry name). */
export async function removeFromClients(options: RemoveOptions): Promise<ClientResult[]> {
  const mine = (await readRegistrations(options.env)).filter(
    (r) =>
      (r.workload === options.name || (options.by !== 'workload' && r.entry === options.name)) &&
      (!options.clients?.length || options.clients.some((c) => c.id === r.client)),
  )
  const results: ClientResult[] = []
  for (const r of mine) {
    const client = clientById(r.client)
    if (!client) continue
    const base = {client: client.id, name: client.name, entry: r.entry, file: r.file, via: r.via}
    try {
      const {change} = await editEntry(client, r.file, r.entry, undefined, {owned: true})
      await updateRegistrations(options.env, (list) => list.filter((x) => !sameEntry(x, r)))
      results.push({...base, change})
    } catch (err) {
      results.push({...base, change: 'failed', error: asToolgateError(err)})
    }
  }
  return results
}

/**
 * A workload that had to take another port: every HTTP entry toolgate wrote for it moves to the
 * new URL — unless the user has changed that entry since, which is then left as it is.
 */
export async function moveWorkloadEntries(
  workload: string,
  url: string,
  env: NodeJS.ProcessEnv,
): Promise<ClientResult[]> {
  const stale = (await readRegistrations(env)).filter(
    (r) => r.workload === workload && r.via === 'http' && r.url !== url,
  )
  const results: ClientResult[] = []
  for (const r of stale) {
    const client = clientById(r.client)
    const before = client?.http(r.url ?? '', r.sse === true)
    const after = client?.http(url, r.sse === true)
    if (!client || !before || !after) continue
    const base = {client: client.id, name: client.name, entry: r.entry, file: r.file, via: r.via}
    try {
      const {change} = await editEntry(client, r.file, r.entry, after, {
        owned: true,
        expect: before,
      })
      if (change === 'updated')
        await updateRegistrations(env, (list) =>
          list.map((x) => (sameEntry(x, r) ? {...x, url} : x)),
        )
      results.push({...base, change})
    } catch (err) {
      results.push({...base, change: 'failed', error: asToolgateError(err)})
    }
  }
  return results
}

/** A file system error (EACCES, EROFS, ENOSPC…) keeps its message: it names the file. */
function asToolgateError(err: unknown): ToolgateError {
  if (isToolgateError(err)) return err
  const errno = typeof (err as NodeJS.ErrnoException)?.code === 'string'
  return new ToolgateError(
    errno ? 'ERR_STORAGE' : 'ERR_INTERNAL',
    (err as Error)?.message ?? String(err),
  )
}
