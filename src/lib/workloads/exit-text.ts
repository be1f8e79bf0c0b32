import type {ExitInfo} from '../supervisor/server-process.ts'

/** "exited (code 3)" / "was killed by SIGKILL": how people read an exit, in logs and errors. */
export function describeExit(info: ExitInfo): string {
  if (info.signal) return `was killed by ${info.signal}`
  return `exited (code ${info.code ?? 'unknown'})`
}
