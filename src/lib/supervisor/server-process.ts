import {spawn, type ChildProcess} from 'node:child_process'
import {ToolgateError} from '../errors.ts'

/**
 * Starting and stopping one MCP server process. On POSIX the server leads its own process group,
 * so a stop reaches what it started too (`npx` runs the real server as a grandchild, which would
 * otherwise outlive a signal to `npx` alone).
 */

export interface SpawnOptions {
  command: string
  args: string[]
  env: NodeJS.ProcessEnv
  cwd?: string
  /** stdio servers talk on stdin/stdout; HTTP servers get stdin closed. */
  stdinOpen: boolean
  /** Started with an IPC channel (a fourth stdio), handed here with the child (a sandbox's). */
  channel?: ((child: ChildProcess) => void) | undefined
}

export interface ExitInfo {
  code: number | null
  signal: NodeJS.Signals | null
}

export interface ServerProcess {
  child: ChildProcess
  exited: Promise<ExitInfo>
}

/** Resolves once the process exists; a command that cannot start (ENOENT, EACCES) rejects. */
export function spawnServer(options: SpawnOptions): Promise<ServerProcess> {
  const child = spawn(options.command, options.args, {
    env: options.env,
    ...(options.cwd ? {cwd: options.cwd} : {}),
    stdio: [
      options.stdinOpen ? 'pipe' : 'ignore',
      'pipe',
      'pipe',
      ...(options.channel ? ['ipc' as const] : []),
    ],
    detached: process.platform !== 'win32',
    windowsHide: true,
  })
  options.channel?.(child)
  const exited = new Promise<ExitInfo>((resolve) => {
    child.once('exit', (code, signal) => resolve({code, signal}))
  })
  return new Promise((resolve, reject) => {
    child.once('spawn', () => resolve({child, exited}))
    child.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        new ToolgateError(
          'ERR_UPSTREAM',
          `cannot start "${options.command}": ${err.code === 'ENOENT' ? 'command not found' : err.message}`,
        ),
      )
    })
  })
}

/** Sends a signal to the process group (POSIX) or the process; a process already gone is fine. */
export function signalServer(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  try {
    if (process.platform !== 'win32') process.kill(-child.pid, signal)
    else child.kill(signal)
  } catch {
    try {
      child.kill(signal)
    } catch {
      // already gone
    }
  }
}

/** SIGTERM, then SIGKILL when the server has not exited after `timeoutMs`. */
export async function stopServer(server: ServerProcess, timeoutMs: number): Promise<ExitInfo> {
  signalServer(server.child, 'SIGTERM')
  let timer: NodeJS.Timeout | undefined
  const killed = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      signalServer(server.child, 'SIGKILL')
      resolve()
    }, timeoutMs)
  })
  const info = await Promise.race([server.exited, killed.then(() => server.exited)])
  clearTimeout(timer)
  // Whatever the leader left behind in its group goes too.
  if (process.platform !== 'win32' && server.child.pid !== undefined) {
    try {
      process.kill(-server.child.pid, 'SIGKILL')
    } catch {
      // the group is empty
    }
  }
  return info
}
