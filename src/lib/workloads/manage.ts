import {unlink} from 'node:fs/promises'
import {setTimeout as sleep} from 'node:timers/promises'
import {ToolgateError} from '../errors.ts'
import {proxyLogFile, serverLogFile} from './detach.ts'
import {
  effectiveStatus,
  listWorkloads,
  pidAlive,
  readWorkload,
  removeWorkload,
  supervisorAlive,
  writeWorkload,
  type WorkloadState,
} from './state.ts'

/**
 * `toolgate list`, `stop` and `rm` over the state files. PIDs are never trusted blindly: a
 * recorded "running" whose supervisor is gone (or whose PID now belongs to another process) is
 * shown as lost, and `stop` signals only processes that are still the ones recorded.
 */

export interface WorkloadRow {
  name: string
  status: string
  url: string
  port: number
  transport: string
  created: string
  exitCode?: number | null
  pid?: number
  /** stdio workloads: shared, principal or session (issue 30). */
  isolation?: string
  /** The permission profile of a sandboxed server (issue 32). */
  sandbox?: string
  /** Isolated workloads: the server processes running now. */
  processes?: {pid?: number; principal?: string; sessions: number; startedAt: string}[]
}

/** `list`'s ISOLATION column: the mode, and for isolated workloads how many processes run. */
export function isolationText(row: WorkloadRow): string {
  if (!row.isolation) return '-'
  if (row.isolation === 'shared' || !row.processes) return row.isolation
  const n = row.processes.length
  return `${row.isolation} (${n} process${n === 1 ? '' : 'es'})`
}

export function statusText(state: WorkloadState): string {
  const status = effectiveStatus(state)
  if (status === 'lost') return `lost (process ${state.supervisorPid} is gone)`
  if (status === 'exited') {
    if (typeof state.error === 'string')
      return `failed to start (${state.error.split('\n')[0]!.slice(0, 120)})`
    if (state.exitSignal) return `exited (${state.exitSignal})`
    return `exited (code ${state.exitCode ?? 'unknown'})`
  }
  return status
}

export async function workloadRows(
  all: boolean,
  env: NodeJS.ProcessEnv = process.env,
): Promise<WorkloadRow[]> {
  const states = await listWorkloads(env)
  return states
    .filter((s) => all || effectiveStatus(s) === 'running' || effectiveStatus(s) === 'starting')
    .map((s) => ({
      name: s.name,
      status: statusText(s),
      url: s.url,
      port: s.port,
      transport: s.transport,
      created: s.createdAt,
      ...(s.status === 'exited' ? {exitCode: s.exitCode ?? null} : {}),
      ...(supervisorAlive(s) && s.supervisorPid ? {pid: s.supervisorPid} : {}),
      ...(typeof s.isolation === 'string' ? {isolation: s.isolation} : {}),
      ...(typeof s.sandbox === 'string' ? {sandbox: s.sandbox} : {}),
      ...(Array.isArray(s.processes) && effectiveStatus(s) === 'running'
        ? {processes: s.processes as NonNullable<WorkloadRow['processes']>}
        : {}),
    }))
}

async function mustRead(name: string, env: NodeJS.ProcessEnv): Promise<WorkloadState> {
  const state = await readWorkload(name, env)
  if (!state) {
    throw new ToolgateError(
      'ERR_NOT_FOUND',
      `workload "${name}" does not exist (see 'toolgate list --all')`,
    )
  }
  return state
}

function signal(pid: number | undefined, sig: NodeJS.Signals, group = false): void {
  if (!pid) return
  try {
    process.kill(group && process.platform !== 'win32' ? -pid : pid, sig)
  } catch {
    // already gone
  }
}

async function waitGone(pid: number | undefined, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (!pidAlive(pid)) return true
    await sleep(50)
  }
  return !pidAlive(pid)
}

/**
 * Stops a workload: SIGTERM to its supervisor, which stops the server (SIGTERM, then SIGKILL) and
 * the proxy and records "stopped". If the server is still there after `timeoutMs`, its process
 * group gets SIGKILL; a supervisor that does not go either is killed and the state written here.
 */
export async function stopWorkload(
  name: string,
  timeoutMs: number,
  env: NodeJS.ProcessEnv = process.env,
): Promise<WorkloadState & {wasRunning: boolean}> {
  const state = await mustRead(name, env)
  const alive = supervisorAlive(state)
  // Nothing to stop: said so by the command, not hidden behind a plain "stopped" (issue 31).
  if (!alive && state.status !== 'running' && state.status !== 'starting')
    return {...state, wasRunning: false}
  if (alive) {
    signal(state.supervisorPid, 'SIGTERM')
    if (!(await waitGone(state.supervisorPid, timeoutMs))) {
      signal(state.serverPid, 'SIGKILL', true)
      if (!(await waitGone(state.supervisorPid, 5_000))) signal(state.supervisorPid, 'SIGKILL')
      await waitGone(state.supervisorPid, 2_000)
    }
  } else if (state.serverPid && pidAlive(state.serverPid)) {
    // The supervisor was killed; its server may still run in its own process group.
    signal(state.serverPid, 'SIGTERM', true)
    if (!(await waitGone(state.serverPid, timeoutMs))) signal(state.serverPid, 'SIGKILL', true)
  }
  const after = (await readWorkload(name, env)) ?? state
  if (after.status === 'running' || after.status === 'starting') {
    const stopped: WorkloadState = {
      ...after,
      status: 'stopped',
      serverPid: undefined,
      stoppedAt: new Date().toISOString(),
    }
    await writeWorkload(stopped, env)
    return {...stopped, wasRunning: true}
  }
  return {...after, wasRunning: true}
}

/** Removes a stopped workload's state and logs; a running one only with `force` (stopped first). */
export async function removeWorkloadFully(
  name: string,
  options: {force: boolean; timeoutMs: number},
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const state = await readWorkload(name, env).catch((err: unknown) => {
    if (options.force) return undefined // a damaged state file is what --force is for
    throw err
  })
  if (
    state &&
    supervisorAlive(state) &&
    (state.status === 'running' || state.status === 'starting')
  ) {
    if (!options.force) {
      throw new ToolgateError(
        'ERR_CONFLICT',
        `workload "${name}" is running; stop it first ('toolgate stop ${name}') or use --force`,
      )
    }
    await stopWorkload(name, options.timeoutMs, env)
  } else if (!state && !options.force) {
    await mustRead(name, env)
  }
  await removeWorkload(name, env)
  for (const file of [serverLogFile(name, env), proxyLogFile(name, env)]) {
    for (const f of [file, `${file}.1`]) {
      await unlink(f).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err
      })
    }
  }
}
