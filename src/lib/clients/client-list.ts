import {listWorkloads, type WorkloadState} from '../workloads/state.ts'
import {CLIENTS, type ClientContext, type Scope} from './catalog.ts'
import {readConfigText} from './config-file.ts'
import {detection} from './context.ts'
import {readRegistrations} from './registrations.ts'
import {openServersDoc} from './servers-doc.ts'

/** One client as `client list` shows it. */
export interface ClientListing {
  client: string
  name: string
  detected: boolean
  /** Why it counts as installed (config, folder or command). */
  detectedBy?: string
  files: {scope: Scope; path: string; exists: boolean; error?: string}[]
  /** Entries that reach a toolgate workload (written by `client add` or by hand). */
  entries: {
    scope: Scope
    entry: string
    workload?: string
    via: 'http' | 'stdio'
    toolgate: boolean
  }[]
}

export async function listClients(
  ctx: ClientContext,
  env: NodeJS.ProcessEnv,
): Promise<ClientListing[]> {
  const workloads = await listWorkloads(env)
  const registrations = await readRegistrations(env)
  const out: ClientListing[] = []
  for (const client of CLIENTS) {
    const why = detection(client, ctx)
    const listing: ClientListing = {
      client: client.id,
      name: client.name,
      detected: why !== undefined,
      ...(why ? {detectedBy: why} : {}),
      files: [],
      entries: [],
    }
    for (const scope of ['user', 'project'] as const) {
      const file = client.file(scope, ctx)
      // In the home folder itself, a project file can be the user file (~/.gemini/settings.json).
      if (!file || (scope === 'project' && file === client.file('user', ctx))) continue
      const config = await readConfigText(file).catch(() => undefined)
      const row: ClientListing['files'][number] = {
        scope,
        path: file,
        exists: config?.text !== undefined,
      }
      try {
        if (config?.text !== undefined) {
          const doc = openServersDoc(client, config.path, config.text)
          for (const [entry, value] of Object.entries(doc.entries)) {
            const reach = workloadOf(value, workloads)
            const ours = registrations.some(
              (r) => r.client === client.id && r.file === config.path && r.entry === entry,
            )
            if (reach || ours)
              listing.entries.push({
                scope,
                entry,
                ...(reach?.workload ? {workload: reach.workload} : {}),
                via: reach?.via ?? (isStdio(value) ? 'stdio' : 'http'),
                toolgate: ours,
              })
          }
        }
      } catch (err) {
        row.error = (err as Error).message
      }
      listing.files.push(row)
    }
    out.push(listing)
  }
  return out
}

/** The workload an entry reaches: its URL is the workload's, or it runs `proxy stdio NAME`. */
function workloadOf(
  value: unknown,
  workloads: WorkloadState[],
): {workload: string; via: 'http' | 'stdio'} | undefined {
  if (!value || typeof value !== 'object') return undefined
  const v = value as Record<string, unknown>
  const url = [v.url, v.httpUrl, v.serverUrl].find((u) => typeof u === 'string')
  if (url) {
    const w = workloads.find((s) => s.url === url)
    return w ? {workload: w.name, via: 'http'} : undefined
  }
  const args = Array.isArray(v.args) ? v.args.map(String) : []
  const i = args.findIndex((a, n) => a === 'proxy' && args[n + 1] === 'stdio')
  const name = i >= 0 ? args[i + 2] : undefined
  return name && workloads.some((s) => s.name === name) ? {workload: name, via: 'stdio'} : undefined
}

function isStdio(value: unknown): boolean {
  return typeof (value as {command?: unknown})?.command === 'string'
}
