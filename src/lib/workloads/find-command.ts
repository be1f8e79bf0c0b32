import {accessSync, constants, statSync} from 'node:fs'
import {delimiter, isAbsolute, join} from 'node:path'
import {ToolgateError} from '../errors.ts'

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
  const runnable = (file: string) => {
    try {
      if (!statSync(file).isFile()) return false
      accessSync(file, constants.X_OK)
      return true
    } catch {
      return false
    }
  }
  if (command.includes('/')) {
    const file = isAbsolute(command) ? command : join(cwd, command)
    if (runnable(file)) return
    throw new ToolgateError(
      'ERR_UPSTREAM',
      `cannot start "${command}": command not found (no executable file at ${file})`,
    )
  }
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir !== '' && runnable(join(dir, command))) return
  }
  throw new ToolgateError(
    'ERR_UPSTREAM',
    `cannot start "${command}": command not found on PATH (install it, or give its full path after --)`,
  )
}
