import {accessSync, constants, statSync} from 'node:fs'
import {delimiter, join} from 'node:path'

/** Whether `file` is a regular file this process may execute. */
export function isExecutableFile(file: string): boolean {
  try {
    if (!statSync(file).isFile()) return false
    accessSync(file, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** The first executable `name` on PATH, as the OS would find it (POSIX); undefined when none. */
export function findOnPath(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue
    const file = join(dir, name)
    if (isExecutableFile(file)) return file
  }
  return undefined
}
