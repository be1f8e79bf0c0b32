import type {ChildProcess} from 'node:child_process'
import {connect} from 'node:net'
import {setTimeout as sleep} from 'node:timers/promises'
import {startBridge, type Bridge} from '../bridge/bridge-server.ts'
import type {UpstreamDispatcher} from '../proxy/forward.ts'
import {
  IsolatedLanes,
  type IsolatedProcessInfo,
  type IsolationMode,
} from '../bridge/isolated-lanes.ts'
import {serverAnswers, SharedLane, type LaneOptions} from '../bridge/lane.ts'
import {ToolgateError} from '../errors.ts'
import type {Logger} from '../log/logger.ts'
import {principalLabel} from '../sessions/principal-key.ts'
import type {ExitInfo, ServerProcess} from '../supervisor/server-process.ts'
import {spawnServer, stopServer} from '../supervisor/server-process.ts'
import {Supervisor, type RestartPolicy} from '../supervisor/supervisor.ts'
import type {RotatingLog} from '../supervisor/rotating-log.ts'
import {describeExit} from './exit-text.ts'

/**
 * The upstream of a local workload: the server process under a Supervisor and, for stdio servers,
 * the bridge that gives it an HTTP face on a private socket — or, with `--isolation principal|
 * session`, a process per caller or per session behind that bridge (bridge/isolated-lanes.ts).
 * The proxy pipeline in front of it is the same as `toolgate proxy`'s.
 */

export interface LocalServerSpec {
  transport: 'stdio' | 'streamable-http' | 'sse'
  command: string[]
  env: NodeJS.ProcessEnv
  targetPort?: number
  requestTimeoutMs: number
  maxBodyBytes: number
  restart: RestartPolicy
  /** How long a new server may take to be usable (HTTP: its port accepts connections). */
  startupTimeoutMs: number
  /** stdio servers: one process for everyone, per principal or per session. */
  isolation: IsolationMode
  idleTimeoutMs: number
  maxProcesses: number
  stopTimeoutMs: number
  /** Each server process gets an IPC channel, handed here (a sandbox's: sandbox.ts). */
  channel?: ((child: ChildProcess) => void) | undefined
}

export interface LocalServerHooks {
  logger: Logger
  /** The server's stderr (and stray stdout) goes here. */
  serverLog: RotatingLog
  /** Foreground runs also show the server's stderr on the terminal. */
  echo?: (chunk: Uint8Array) => void
  onStarted: (pid: number | undefined) => void
  onExited: (info: ExitInfo, restarting: boolean) => void
  /** Isolated processes started, stopped or changed owner. */
  onProcesses?: (processes: IsolatedProcessInfo[]) => void
}

export interface LocalServer {
  targetUri: string
  targetSocketPath?: string
  /** A bridge in this process (the gateway): the front forwards through this, no socket. */
  targetDispatcher?: UpstreamDispatcher
  /** The one server process (shared isolation, HTTP servers); undefined when isolated. */
  currentPid(): number | undefined
  /** Server processes running now (for /metrics). */
  processes(): number
  /** MCP sessions the stdio bridge holds now; undefined without a bridge (HTTP servers). */
  sessions(): number | undefined
  close(stopTimeoutMs: number): Promise<ExitInfo | undefined>
}

// A server that dies this soon after starting did not start (bad arguments, missing package).
const EARLY_EXIT_MS = 1_000

export async function startLocalServer(
  spec: LocalServerSpec,
  hooks: LocalServerHooks,
): Promise<LocalServer> {
  const [command, ...args] = spec.command
  if (!command) throw new ToolgateError('ERR_USAGE', 'no server command given after --')
  const {logger, serverLog} = hooks
  const stdio = spec.transport === 'stdio'
  const env = stdio
    ? spec.env
    : {...spec.env, PORT: String(spec.targetPort), MCP_PORT: String(spec.targetPort)}
  const tail = new StderrTail()
  const record = (chunk: Uint8Array) => {
    serverLog.write(chunk)
    tail.add(chunk)
    hooks.echo?.(chunk)
  }
  const spawn = () => spawnServer({command, args, env, stdinOpen: stdio, channel: spec.channel})
  const laneOptions: LaneOptions = {
    logger,
    requestTimeoutMs: spec.requestTimeoutMs,
    onNoise: (line) => serverLog.line(`[stdout, not JSON-RPC] ${line}`),
  }
  if (stdio && spec.isolation !== 'shared') {
    return startIsolated(spec, hooks, {spawn, record, laneOptions, tail})
  }

  const shared = stdio ? new SharedLane(laneOptions) : undefined
  const bridge: Bridge | undefined = shared
    ? await startBridge({logger, maxBodyBytes: spec.maxBodyBytes}, shared)
    : undefined
  const supervisor = new Supervisor({
    logger,
    policy: spec.restart,
    spawn,
    onStarted: (server: ServerProcess) => {
      server.child.stderr?.on('data', record)
      if (shared) shared.lane.attach({stdin: server.child.stdin!, stdout: server.child.stdout!})
      else server.child.stdout?.on('data', record)
      logger.info('server started', {pid: server.child.pid})
      hooks.onStarted(server.child.pid)
    },
    onExited: (info, restarting) => {
      const text = describeExit(info)
      serverLog.line(`[toolgate] MCP server ${text}`)
      logger.warn('server exited', {code: info.code, signal: info.signal, restarting})
      shared?.lane.detach(`MCP server ${text}`)
      hooks.onExited(info, restarting)
    },
  })
  const close = async (stopTimeoutMs: number) => {
    const info = await supervisor.stop(stopTimeoutMs)
    await bridge?.close()
    return info
  }
  try {
    await supervisor.start()
    const early = await Promise.race([
      supervisor.current!.exited,
      stdio
        ? sleep(EARLY_EXIT_MS).then(() => undefined)
        : waitForPort(spec.targetPort!, spec.startupTimeoutMs, supervisor.current!.exited),
    ])
    if (early)
      throw new ToolgateError(
        'ERR_UPSTREAM',
        `the MCP server ${describeExit(early)} while starting${tail.text()}`,
      )
    if (shared) {
      const why = await serverAnswers(
        shared.lane,
        supervisor.current!.exited,
        spec.startupTimeoutMs,
      )
      if (why) throw notAnMcpServer(command, why, tail)
    }
  } catch (err) {
    await close(2_000)
    throw err
  }
  const currentPid = () => supervisor.current?.child.pid
  const counts = {
    processes: () => (currentPid() === undefined ? 0 : 1),
    sessions: () => bridge?.sessions,
  }
  return bridge
    ? {
        targetUri: 'http://localhost',
        targetSocketPath: bridge.socketPath!,
        currentPid,
        close,
        ...counts,
      }
    : {targetUri: `http://127.0.0.1:${spec.targetPort}`, currentPid, close, ...counts}
}

/** `--isolation principal|session`: processes started per owner behind one bridge. */
async function startIsolated(
  spec: LocalServerSpec,
  hooks: LocalServerHooks,
  parts: {
    spawn: () => Promise<ServerProcess>
    record: (chunk: Uint8Array) => void
    laneOptions: LaneOptions
    tail: StderrTail
  },
): Promise<LocalServer> {
  const {logger, serverLog} = hooks
  const lanes = new IsolatedLanes({
    mode: spec.isolation as 'principal' | 'session',
    lane: parts.laneOptions,
    logger,
    maxProcesses: spec.maxProcesses,
    idleTimeoutMs: spec.idleTimeoutMs,
    spawn: async () => {
      const server = await parts.spawn()
      server.child.stderr?.on('data', parts.record)
      return server
    },
    stop: (server) => stopServer(server, spec.stopTimeoutMs),
    onExit: (server, info, owner) => {
      const who = owner === undefined ? 'unused' : `of ${principalLabel(owner)}`
      serverLog.line(
        `[toolgate] MCP server process ${server.child.pid} (${who}) ${describeExit(info)}`,
      )
    },
    ...(hooks.onProcesses ? {onChange: hooks.onProcesses} : {}),
  })
  const bridge = await startBridge({logger, maxBodyBytes: spec.maxBodyBytes}, lanes)
  try {
    await lanes.start((lane, server) => serverAnswers(lane, server.exited, spec.startupTimeoutMs))
  } catch (err) {
    await bridge.close()
    const exit = (err as {exit?: ExitInfo}).exit
    const why = (err as {why?: string}).why
    if (why) throw notAnMcpServer(spec.command[0]!, why, parts.tail)
    if (!exit) throw err
    throw new ToolgateError(
      'ERR_UPSTREAM',
      `the MCP server ${describeExit(exit)} while starting${parts.tail.text()}`,
    )
  }
  return {
    targetUri: 'http://localhost',
    targetSocketPath: bridge.socketPath!,
    currentPid: () => undefined,
    processes: () => lanes.processes().length,
    sessions: () => bridge.sessions,
    close: async () => {
      await bridge.close()
      return undefined
    },
  }
}

/** The last lines a server wrote on stderr, for a start that failed. */
class StderrTail {
  #lines: string[] = []
  #partial = ''

  add(chunk: Uint8Array): void {
    const parts = (this.#partial + Buffer.from(chunk).toString('utf8')).split('\n')
    this.#partial = (parts.pop() ?? '').slice(-2000)
    for (const line of parts) if (line.trim() !== '') this.#lines.push(line.slice(0, 2000))
    if (this.#lines.length > 10) this.#lines = this.#lines.slice(-10)
  }

  /** "\nits last stderr lines: …", or nothing when it wrote none. */
  text(): string {
    const lines = [...this.#lines, ...(this.#partial.trim() ? [this.#partial] : [])].slice(-10)
    return lines.length ? `; its last stderr lines:\n${lines.map((l) => `  ${l}`).join('\n')}` : ''
  }
}

function notAnMcpServer(command: string, why: string, tail: StderrTail): ToolgateError {
  return new ToolgateError(
    'ERR_UPSTREAM',
    `the server did not answer initialize: ${why}. Is "${command}" an MCP server that speaks stdio (JSON-RPC on stdin/stdout)? A server that listens on a port needs --transport streamable-http|sse and --target-port${tail.text()}`,
  )
}

/** Resolves undefined once the port accepts a connection; the exit info if the server died first. */
async function waitForPort(
  port: number,
  timeoutMs: number,
  exited: Promise<ExitInfo>,
): Promise<ExitInfo | undefined> {
  let dead: ExitInfo | undefined
  void exited.then((info) => (dead = info))
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (dead) return dead
    if (await canConnect(port)) return undefined
    await sleep(100)
  }
  throw new ToolgateError(
    'ERR_UPSTREAM',
    `the MCP server did not listen on port ${port} within ${Math.round(timeoutMs / 1000)} s (--target-port must be the port it listens on)`,
  )
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({host: '127.0.0.1', port})
    socket.setTimeout(1_000)
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
    socket.once('timeout', () => {
      socket.destroy()
      resolve(false)
    })
  })
}
