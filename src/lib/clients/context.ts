import {existsSync} from 'node:fs'
import {homedir} from 'node:os'
import {dirname} from 'node:path'
import {ToolgateError} from '../errors.ts'
import {findOnPath} from '../fs/path-lookup.ts'
import {CLIENTS, clientById, CLIENT_IDS, type ClientContext, type ClientDef} from './catalog.ts'

/** This machine, as `toolgate client` sees it. */
export function currentContext(env: NodeJS.ProcessEnv = process.env): ClientContext {
  const platform =
    process.platform === 'win32' || process.platform === 'darwin' ? process.platform : 'linux'
  return {platform, home: env.HOME || env.USERPROFILE || homedir(), env, cwd: process.cwd()}
}

/**
 * Why a client counts as installed here: its config file or folder exists, or its command is on
 * PATH. Undefined when none of these holds.
 */
export function detection(client: ClientDef, ctx: ClientContext): string | undefined {
  const file = client.file('user', ctx)
  if (file && existsSync(file)) return `config ${file}`
  // The folder alone (~/.gemini, ~/.codex, Code/User) is there once the client has run; a home
  // folder itself says nothing (Claude Code's file sits directly in it).
  if (file && dirname(file) !== ctx.home && existsSync(dirname(file)))
    return `folder ${dirname(file)}`
  for (const command of client.commands) {
    const found = findOnPath(ctx.platform === 'win32' ? `${command}.cmd` : command, ctx.env)
    if (found) return `command ${found}`
  }
  return undefined
}

export function detectedClients(ctx: ClientContext): ClientDef[] {
  return CLIENTS.filter((c) => detection(c, ctx) !== undefined)
}

/** `--client` values (repeatable, comma lists allowed) → definitions; an unknown id is an error. */
export function clientsNamed(ids: string[]): ClientDef[] {
  const out: ClientDef[] = []
  for (const id of ids
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean)) {
    const client = clientById(id)
    if (!client)
      throw new ToolgateError(
        'ERR_USAGE',
        `--client ${id.slice(0, 40)}: not a client toolgate knows (${CLIENT_IDS.join(', ')})`,
      )
    if (!out.includes(client)) out.push(client)
  }
  return out
}
