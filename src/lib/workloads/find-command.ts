import {isAbsolute, join} from 'node:path'
import {ToolgateError} from '../errors.ts'
import {findOnPath, isExecutableFile} from '../fs/path-lookup.ts'
import {recognizeUvx} from '../sandbox/pypi-install.ts'

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

/**
 * Whether a sandboxed start replaces the command with an install outside and the package's own
 * script (`uvx <package>`, pypi-install.ts): then uvx itself need not be installed.
 */
export function replacedBySandbox(command: string[], sandboxed: boolean): boolean {
  return sandboxed && recognizeUvx(command) !== undefined
}
