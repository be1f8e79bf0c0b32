import {dirname} from 'node:path'
import {selfInvocation} from '../cli/self.ts'
import {xdgDirs} from '../config/xdg.ts'
import {ToolgateError} from '../errors.ts'
import {readWorkload, validateWorkloadName} from '../workloads/state.ts'
import type {ClientDef, EntryTarget} from './catalog.ts'

/** What `client add` connects clients to: a workload by name, or a server URL. */
export interface ClientTarget {
  /** As the user gave it: the workload name or the URL. */
  given: string
  workload?: string
  url: string
  sse: boolean
  /** The default entry name. */
  entry: string
}

const ENTRY = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/

export function validateEntryName(name: string): string {
  if (!ENTRY.test(name))
    throw new ToolgateError(
      'ERR_USAGE',
      `--name "${name.slice(0, 80)}": use letters, digits, '-' and '_' (at most 64, starting with a letter or digit), which every client accepts`,
    )
  return name
}

export async function resolveClientTarget(
  given: string,
  env: NodeJS.ProcessEnv,
): Promise<ClientTarget> {
  if (given.includes('://')) {
    let url: URL
    try {
      url = new URL(given)
    } catch {
      throw new ToolgateError('ERR_USAGE', `"${given.slice(0, 120)}" is not a URL`)
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new ToolgateError('ERR_USAGE', `${url.protocol} URLs are not supported: use http(s)`)
    if (url.username || url.password)
      throw new ToolgateError(
        'ERR_USAGE',
        'the URL holds a user name or password; client configs are not the place for credentials',
      )
    const entry = url.hostname
      .replace(/[^A-Za-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 64)
    return {given, url: url.href, sse: /\/sse\/?$/.test(url.pathname), entry: entry || 'mcp'}
  }
  const name = validateWorkloadName(given)
  const state = await readWorkload(name, env)
  if (!state)
    throw new ToolgateError(
      'ERR_NOT_FOUND',
      `workload "${name}" does not exist (start it with 'toolgate run ${name} -- …', see 'toolgate list --all')`,
    )
  if (!state.url)
    throw new ToolgateError(
      'ERR_NOT_FOUND',
      `workload "${name}" never started listening (see 'toolgate logs ${name}'); run it again first`,
    )
  return {given, workload: name, url: state.url, sse: state.transport === 'sse', entry: name}
}

/**
 * The stdio entry: this very toolgate (the standalone executable, or Node and the entry script of
 * this install) running `proxy stdio TARGET`, with the XDG folders it uses now, so a client that
 * starts it with another HOME or environment still finds the workload (docs/clients.md).
 */
export function stdioTarget(target: ClientTarget, env: NodeJS.ProcessEnv): EntryTarget {
  const self = selfInvocation()
  const dirs = xdgDirs(env)
  return {
    via: 'stdio',
    command: self.command,
    args: [...self.args, 'proxy', 'stdio', target.given],
    env: {
      XDG_CONFIG_HOME: dirname(dirs.config),
      XDG_DATA_HOME: dirname(dirs.data),
      XDG_STATE_HOME: dirname(dirs.state),
    },
  }
}

export interface PlannedEntry {
  via: 'http' | 'stdio'
  value: Record<string, unknown>
  /** Said to the user when the client got stdio although HTTP was asked for or preferred. */
  note?: string
}

/** The entry one client gets: HTTP when asked or possible, else stdio (and a note why). */
export function planEntry(
  client: ClientDef,
  target: ClientTarget,
  via: 'http' | 'stdio' | undefined,
  env: NodeJS.ProcessEnv,
): PlannedEntry {
  if (via !== 'stdio') {
    const http = client.http(target.url, target.sse)
    if (http) return {via: 'http', value: http}
  }
  const note =
    via === 'stdio'
      ? undefined
      : `${client.name} cannot reach ${target.sse ? 'a legacy SSE' : 'an HTTP'} server; it starts 'toolgate proxy stdio ${target.given}' instead`
  const stdio = stdioTarget(target, env) as Extract<EntryTarget, {via: 'stdio'}>
  return {via: 'stdio', value: client.stdio(stdio), ...(note ? {note} : {})}
}
