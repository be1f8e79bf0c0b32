import {ToolgateError} from '../errors.ts'
import type {ClientDef, Scope} from './catalog.ts'
import {addToClients, removeFromClients} from './client-ops.ts'
import {clientsNamed, currentContext, detectedClients} from './context.ts'
import {reportClientResults} from './report.ts'

/** The steps of `toolgate client add|remove` (the commands stay thin parsers). */

export interface ClientOutput {
  json: boolean
  stdout: (line: string) => void
  stderr: (line: string) => void
}

export interface ClientAddFlags {
  client?: string[] | undefined
  'all-detected': boolean
  scope: string
  via?: string | undefined
  name?: string | undefined
  force: boolean
}

/** `--client …` or `--all-detected` → the clients to change; one of them is required. */
export function chooseClients(
  flags: {client?: string[] | undefined; 'all-detected': boolean},
  env: NodeJS.ProcessEnv = process.env,
): ClientDef[] {
  const named = clientsNamed(flags.client ?? [])
  if (named.length && flags['all-detected'])
    throw new ToolgateError('ERR_USAGE', 'give --client or --all-detected, not both')
  if (named.length) return named
  const ctx = currentContext(env)
  const found = detectedClients(ctx)
  if (!flags['all-detected'])
    throw new ToolgateError(
      'ERR_USAGE',
      `say which clients: --client ID (repeatable) or --all-detected (found here: ${found.map((c) => c.id).join(', ') || 'none'})`,
    )
  if (found.length === 0)
    throw new ToolgateError(
      'ERR_NOT_FOUND',
      'no supported MCP client was found on this machine (see toolgate client list); name one with --client ID',
    )
  return found
}

export async function runClientAdd(
  target: string,
  flags: ClientAddFlags,
  out: ClientOutput,
  clients: ClientDef[] = chooseClients(flags),
): Promise<void> {
  const results = await addToClients({
    target,
    clients,
    scope: flags.scope as Scope,
    via: flags.via as 'http' | 'stdio' | undefined,
    entry: flags.name,
    force: flags.force,
    ctx: currentContext(),
    env: process.env,
  })
  if (results.every((r) => r.change === 'skipped'))
    throw new ToolgateError(
      'ERR_USAGE',
      `none of these clients has a ${flags.scope} scope: ${results.map((r) => r.name).join(', ')}`,
    )
  reportClientResults(results, out)
}

export async function runClientRemove(
  name: string,
  flags: {client?: string[] | undefined},
  out: ClientOutput,
): Promise<number> {
  const results = await removeFromClients({
    name,
    clients: clientsNamed(flags.client ?? []),
    env: process.env,
  })
  reportClientResults(results, out)
  return results.length
}
