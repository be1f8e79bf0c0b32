import {createRequire} from 'node:module'

/**
 * How to start this same program again (a detached `run`): the standalone executable is its own
 * program; from npm or source it is Node with this process's flags and entry script.
 */
export function selfInvocation(nodeFlags: string[] = []): {command: string; args: string[]} {
  // A single executable passes its own arguments to the program, not to Node: flags are dropped.
  if (isSingleExecutable()) return {command: process.execPath, args: []}
  return {command: process.execPath, args: [...nodeFlags, ...process.execArgv, process.argv[1]!]}
}

/** Whether this process is the standalone executable (a Node single-executable application). */
export function isSingleExecutable(): boolean {
  try {
    const sea = createRequire(import.meta.url)('node:sea') as {isSea?: () => boolean}
    return sea.isSea?.() === true
  } catch {
    return false
  }
}
