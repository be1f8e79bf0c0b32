import {spawn} from 'node:child_process'
import {closeSync, fstatSync, statSync} from 'node:fs'
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'
import {ToolgateError} from '../errors.ts'
import {xdgDirs} from '../config/xdg.ts'
import {ensurePrivateDir, openPrivateAppend} from '../fs/private-path.ts'
import {selfInvocation} from '../cli/self.ts'
import type {ChildRequest} from './child-argv.ts'
import {CHILD_FLAG} from './child-flag.ts'
import {backgroundProcessEnv} from './malloc-env.ts'
import {readWorkload, workloadLogsDir, type WorkloadState} from './state.ts'

/**
 * A detached `toolgate run`: this same program (from source or the standalone binary) is started
 * again as a background process in its own session, with the parsed arguments passed on its stdin
 * (child-argv.ts) — never on its command line, which every user of the machine can read in `ps` (a
 * bearer token flag would show). The parent waits until the workload's state file says it is ready, then
 * returns it; if the background process dies first, the error carries the last lines it logged.
 */

/**
 * The background process lives long and mostly moves small messages. With V8's defaults the young
 * generation grows to 64 MB of semi-spaces under load (RSS 90 → 150 MB in bench/run-bridge.bench.ts)
 * for no gain; 2 MB semi-spaces kept RSS flat at the same throughput. `--optimize-for-size` makes
 * V8 grow the old generation less eagerly: detached from dist, 16 sessions and 20,000 calls peaked
 * at 133 MB without it and 107 MB with it, with no RSS growth over the soak and the same calls/s
 * (`--single-threaded` and MALLOC_ARENA_MAX=2 were tried on top and changed nothing). A V8 flag
 * must be given at start (set later it has no effect), so it goes on the command line of the
 * re-launched process; a single executable cannot take Node flags and runs without them.
 */
const V8_FLAGS = ['--max-semi-space-size=2', '--optimize-for-size']

export function serverLogFile(name: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(workloadLogsDir(env), `${name}.log`)
}

export function proxyLogFile(name: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(workloadLogsDir(env), `${name}.proxy.log`)
}

export interface DetachOptions {
  name: string
  /** The parsed `run` arguments for the background process. */
  request: ChildRequest
  env?: NodeJS.ProcessEnv
  timeoutMs: number
  /** Shows what the background process logs while waiting (a login URL, a device code). */
  relay?: (line: string) => void
}

export async function startDetached(options: DetachOptions): Promise<WorkloadState> {
  const env = options.env ?? process.env
  const logFile = proxyLogFile(options.name, env)
  ensurePrivateDir(workloadLogsDir(env), xdgDirs(env).state)
  const fd = openPrivateAppend(logFile)
  // Only what this start writes is relayed or quoted in an error, not earlier runs' lines.
  const relayFrom = fstatSync(fd).size
  const serverFrom = fileSize(serverLogFile(options.name, env))
  const {command, args} = selfInvocation(V8_FLAGS)
  const background = backgroundProcessEnv(env)
  // toolgate's own variables (the secrets password, bearer tokens, client secrets,
  // TOOLGATE_SECRET_*) travel on stdin with the arguments: a process's initial environment stays
  // readable in /proc/<pid>/environ for as long as it lives (issue 30, finding 7).
  const {kept, moved} = splitOwnVariables(background.env)
  const child = spawn(command, [...args, 'run', CHILD_FLAG], {
    detached: true,
    stdio: ['pipe', fd, fd],
    env: kept,
    windowsHide: true,
  })
  closeSync(fd)
  let exit: {code: number | null; signal: string | null} | undefined
  child.once('exit', (code, signal) => (exit = {code, signal}))
  child.once('error', (err) => (exit = {code: null, signal: err.message}))
  child.stdin!.on('error', () => undefined)
  const request: ChildRequest = {
    ...options.request,
    addedEnv: background.added,
    ...(Object.keys(moved).length > 0 ? {ownEnv: moved} : {}),
  }
  child.stdin!.end(JSON.stringify(request))
  child.unref()

  let relayed = relayFrom
  const deadline = Date.now() + options.timeoutMs
  while (Date.now() < deadline) {
    if (options.relay) relayed = await relayNew(logFile, relayed, options.relay)
    const state = await readWorkload(options.name, env).catch(() => undefined)
    if (state && child.pid !== undefined && state.supervisorPid === child.pid) {
      if (state.status === 'running' && state.ready === true) return state
      if (state.status === 'exited' || state.status === 'stopped') break
    }
    if (exit) break
    await sleep(100)
  }
  const timedOut = !exit && Date.now() >= deadline
  // A start that failed is recorded before the background process writes why and exits: wait for
  // that (briefly), so the reason is in the log read below.
  for (const until = Date.now() + 3_000; !timedOut && !exit && Date.now() < until;) await sleep(50)
  if (timedOut) {
    try {
      process.kill(child.pid!, 'SIGTERM')
    } catch {
      // gone
    }
  }
  throw new ToolgateError(
    'ERR_UPSTREAM',
    `workload "${options.name}" did not start${!timedOut ? '' : ` within ${Math.round(options.timeoutMs / 1000)} s`}:\n${await lastLines(options.name, env, relayFrom, serverFrom)}`,
  )
}

/** Splits off the `TOOLGATE_*` variables, which go to the background process on its stdin. */
export function splitOwnVariables(env: NodeJS.ProcessEnv): {
  kept: NodeJS.ProcessEnv
  moved: Record<string, string>
} {
  const kept: NodeJS.ProcessEnv = {}
  const moved: Record<string, string> = {}
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) continue
    if (k.startsWith('TOOLGATE_')) moved[k] = v
    else kept[k] = v
  }
  return {kept, moved}
}

function fileSize(file: string): number {
  try {
    return statSync(file).size
  } catch {
    return 0
  }
}

async function relayNew(
  file: string,
  from: number,
  relay: (line: string) => void,
): Promise<number> {
  const data = await readFile(file).catch(() => Buffer.alloc(0))
  if (data.length <= from) return data.length < from ? 0 : from
  const text = data.subarray(from).toString('utf8')
  const end = text.lastIndexOf('\n')
  if (end === -1) return from
  for (const line of text.slice(0, end).split('\n')) relay(line)
  return from + Buffer.byteLength(text.slice(0, end + 1))
}

/** The last lines of this start's proxy log and of the server's stderr, for a failed start. */
async function lastLines(
  name: string,
  env: NodeJS.ProcessEnv,
  proxyFrom: number,
  serverFrom: number,
): Promise<string> {
  const tail = async (file: string, from = 0, n = 15) => {
    const data = await readFile(file).catch(() => Buffer.alloc(0))
    return data
      .subarray(Math.min(from, data.length))
      .toString('utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .slice(-n)
  }
  const proxy = await tail(proxyLogFile(name, env), proxyFrom)
  const server = await tail(serverLogFile(name, env), serverFrom)
  const parts: string[] = []
  if (server.length)
    parts.push(`server stderr (${serverLogFile(name, env)}):`, ...server.map((l) => `  ${l}`))
  if (proxy.length)
    parts.push(`toolgate log (${proxyLogFile(name, env)}):`, ...proxy.map((l) => `  ${l}`))
  return parts.join('\n') || '(nothing was logged)'
}
