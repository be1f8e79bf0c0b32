import {readFileSync} from 'node:fs'
import {readdir, readFile, unlink} from 'node:fs/promises'
import {join} from 'node:path'
import {xdgDirs} from '../config/xdg.ts'
import {ToolgateError} from '../errors.ts'
import {atomicWriteFile} from '../fs/atomic-write.ts'
import {ensurePrivateDir} from '../fs/private-path.ts'

/**
 * Workload state (contract §5): one JSON file per workload under
 * `$XDG_STATE_HOME/toolgate/workloads/<name>.json`, written atomically (0600, directory 0700).
 * It holds what `list`, `logs`, `stop`, `proxy stdio NAME` and `proxy tunnel NAME` need — never a
 * secret value (`--secret` names only, no `-e` values, no tokens).
 */

export type WorkloadStatus = 'starting' | 'running' | 'exited' | 'stopped'

export type WorkloadTransport = 'stdio' | 'streamable-http' | 'sse' | 'remote' | 'gateway'

export interface WorkloadState {
  name: string
  status: WorkloadStatus
  transport: WorkloadTransport
  /** The proxy front clients use: `http://<host>:<port>` (no path). */
  baseUrl: string
  /** The MCP endpoint clients point at: `<baseUrl>/mcp` (legacy SSE: `<baseUrl>/sse`). */
  url: string
  host: string
  port: number
  /** Whether the front validates incoming tokens (a tunnel warns when it does not). */
  incomingAuth: boolean
  /** The background toolgate process that runs the proxy and supervises the server. */
  supervisorPid?: number
  /** When the supervisor started (Linux: /proc start time), so a reused PID is not mistaken for it. */
  supervisorStart?: string
  /** The MCP server process, for local workloads. */
  serverPid?: number
  exitCode?: number | null
  exitSignal?: string | null
  /** The server command (argv), or the remote URL for `--url` workloads; no secret values. */
  command?: string[]
  remoteUrl?: string
  createdAt: string
  updatedAt: string
  /** Forward-compatible: fields a newer version writes are kept by an older reader. */
  [extra: string]: unknown
}

// A name becomes a file name and appears in URLs and logs: a DNS label, so never a path.
const NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/

export function validateWorkloadName(name: string): string {
  if (!NAME.test(name)) {
    throw new ToolgateError(
      'ERR_USAGE',
      `workload name "${name.slice(0, 80)}": use lower-case letters, digits and '-' (at most 63 characters, no leading or trailing '-')`,
    )
  }
  return name
}

export function workloadsDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(xdgDirs(env).state, 'workloads')
}

export function workloadLogsDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(xdgDirs(env).state, 'logs')
}

export function workloadFile(name: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(workloadsDir(env), `${validateWorkloadName(name)}.json`)
}

export async function writeWorkload(
  state: WorkloadState,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const data = {...state, updatedAt: new Date().toISOString()}
  ensurePrivateDir(workloadsDir(env), xdgDirs(env).state)
  await atomicWriteFile(workloadFile(state.name, env), JSON.stringify(data, null, 2) + '\n')
}

/** The recorded state, or undefined when there is no such workload. */
export async function readWorkload(
  name: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<WorkloadState | undefined> {
  const file = workloadFile(name, env)
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new ToolgateError('ERR_FILE_UNREADABLE', `${file}: ${(err as Error).message}`)
  }
  try {
    const state = JSON.parse(text) as WorkloadState
    if (state?.name !== name || typeof state.url !== 'string') throw new Error('not a workload')
    return state
  } catch (err) {
    throw new ToolgateError(
      'ERR_STORAGE',
      `${file}: workload state is damaged (${(err as Error).message}); remove it with 'toolgate rm --force ${name}'`,
    )
  }
}

export async function listWorkloads(
  env: NodeJS.ProcessEnv = process.env,
): Promise<WorkloadState[]> {
  let names: string[]
  try {
    names = await readdir(workloadsDir(env))
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw err
  }
  const states: WorkloadState[] = []
  for (const file of names.sort()) {
    const name = file.endsWith('.json') ? file.slice(0, -5) : ''
    if (!NAME.test(name)) continue
    const state = await readWorkload(name, env).catch(() => undefined)
    if (state) states.push(state)
  }
  return states
}

export async function removeWorkload(
  name: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  await unlink(workloadFile(name, env)).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err
  })
}

/**
 * Whether a process with this PID exists (EPERM: it exists but belongs to someone else). A zombie
 * (exited, not yet reaped by its new parent) counts as gone.
 */
export function pidAlive(pid: number | undefined): boolean {
  if (!pid || !Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false
  }
  return procStatField(pid, 0) !== 'Z'
}

/** A field of /proc/<pid>/stat counted after the command name (0 = state); undefined without /proc. */
function procStatField(pid: number, index: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name (field 2) is in parentheses and may contain spaces: count after it.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[index]
  } catch {
    return undefined
  }
}

/**
 * The start time of a process as the kernel records it (Linux `/proc/<pid>/stat` field 22, in
 * clock ticks since boot); undefined where there is no /proc. Together with the PID it names one
 * process: a PID reused by an unrelated process has another start time.
 */
export function processStartTime(pid: number): string | undefined {
  return procStatField(pid, 19)
}

/** Whether the workload's supervisor process is alive — that very process, not a PID reuse. */
export function supervisorAlive(state: WorkloadState): boolean {
  if (!pidAlive(state.supervisorPid)) return false
  if (state.supervisorStart === undefined) return true
  const now = processStartTime(state.supervisorPid!)
  return now === undefined || now === state.supervisorStart
}

/** What a workload's status really is: a recorded "running" whose process is gone is "lost". */
export function effectiveStatus(state: WorkloadState): WorkloadStatus | 'lost' {
  if ((state.status === 'running' || state.status === 'starting') && !supervisorAlive(state))
    return 'lost'
  return state.status
}

/**
 * The state of a workload that is running now, for commands that connect to it by name
 * (`proxy stdio NAME`, `proxy tunnel NAME`). A recorded "running" whose supervisor is gone is
 * stale and refused: the PID is checked, never trusted blindly.
 */
export async function findRunningWorkload(
  name: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<WorkloadState> {
  const state = await readWorkload(validateWorkloadName(name), env)
  if (!state) {
    throw new ToolgateError(
      'ERR_NOT_FOUND',
      `workload "${name}" does not exist (see 'toolgate list --all')`,
    )
  }
  if (state.status !== 'running' || !supervisorAlive(state)) {
    const why =
      state.status === 'exited' ? `exited (code ${state.exitCode ?? 'unknown'})` : state.status
    throw new ToolgateError(
      'ERR_NOT_FOUND',
      `workload "${name}" is not running (${state.status === 'running' ? 'its process is gone' : why}); start it with 'toolgate run'`,
    )
  }
  return state
}
