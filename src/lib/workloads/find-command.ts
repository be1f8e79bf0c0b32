import {isAbsolute, join} from 'node:path'
import {ToolgateError} from '../errors.ts'
import {findOnPath, isExecutableFile} from '../fs/path-lookup.ts'

/**
 * Finds a server command the way the OS will when it is started (PATH lookup, or a path given
 * directly), so `run` reports "command not found" before anything starts rather than as an exit
 * "code unknown" after (issue 31). On Windows the lookup is left to the spawn (PATHEXT rules).
 */
export function assertCommandExists(
  command: string,
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): void {
  if (process.platform === 'win32') return
  if (command.includes('/')) {
    const file = isAbsolute(command) ? command : join(cwd, command)
    if (isExecutableFile(file)) return
    throw new ToolgateError(
      'ERR_UPSTREAM',
      `cannot start "${command}": command not found (no executable file at ${file})`,
    )
  }
  if (findOnPath(command, env)) return
  throw new ToolgateError(
    'ERR_UPSTREAM',
    `cannot start "${command}": command not found on PATH (install it, or give its full path after --)`,
  )
}
