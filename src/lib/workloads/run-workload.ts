import {ToolgateError} from '../errors.ts'
import {incomingAuthEnabled} from '../proxy/incoming-auth.ts'
import type {Logger} from '../log/logger.ts'
import {
  startPipeline,
  type Pipeline,
  type PipelineDeps,
  type PipelineFlags,
} from '../proxy/pipeline.ts'
import type {ExitInfo} from '../supervisor/server-process.ts'
import type {RestartPolicy} from '../supervisor/supervisor.ts'
import type {RotatingLog} from '../supervisor/rotating-log.ts'
import type {IsolationMode} from '../bridge/isolated-lanes.ts'
import type {PermissionProfile} from '../sandbox/profile.ts'
import type {PreparedSandbox} from '../sandbox/sandbox.ts'
import {startLocalServer, type LocalServer} from './local-server.ts'
import type {GatewayConfig} from '../gateway/config.ts'
import {backendAttribute} from '../gateway/names.ts'
import {assertCommandExists, replacedBySandbox} from './find-command.ts'
import {assertCanListen} from '../http/listen.ts'
import {
  processStartTime,
  readWorkload,
  supervisorAlive,
  writeWorkload,
  type WorkloadState,
  type WorkloadTransport,
} from './state.ts'

/**
 * One workload in this process (`toolgate run --foreground`, or the background process of a
 * detached run): the server (or a remote URL) behind the proxy pipeline, with its state file kept
 * current — starting → running → exited (the server ended on its own) or stopped (asked to).
 */

export interface WorkloadSpec {
  name: string
  transport: WorkloadTransport
  /** Local workloads: the server command. */
  command?: string[]
  /** Remote workloads (`--url`). */
  url?: string
  targetPort?: number
  env: NodeJS.ProcessEnv
  /** Names only, for the state file. */
  secretNames: string[]
  requestTimeoutMs: number
  stopTimeoutMs: number
  startupTimeoutMs: number
  restart: RestartPolicy
  /** stdio servers: one process shared, per principal, or per session (issue 30). */
  isolation: IsolationMode
  idleTimeoutMs: number
  maxProcesses: number
  /** Run the server confined (issue 32). */
  sandbox?:
    | {profile: PermissionProfile; npmRegistry?: string | undefined; pypiIndex?: string | undefined}
    | undefined
  /** `toolgate gateway`: the backends behind one endpoint (issue 37). */
  gateway?: GatewayConfig
  /** The pipeline flags (incoming auth, authz, outgoing auth, limits); target and port are set here. */
  flags: PipelineFlags
  proxyPort?: number
}

export interface WorkloadDeps {
  logger: Logger
  pipeline: PipelineDeps
  serverLog: RotatingLog
  echo?: (chunk: Uint8Array) => void
  stateEnv?: NodeJS.ProcessEnv
}

export interface RunningWorkload {
  state: WorkloadState
  pipeline: Pipeline
  /** Resolves with the final state once the workload is over (server exited, or stop()). */
  finished: Promise<WorkloadState>
  /** Runs the remote login when one is configured, then records the workload as ready. */
  login(): Promise<void>
  stop(): Promise<WorkloadState>
}

/** Refuses a name whose workload is alive (its recorded supervisor process still exists). */
export async function assertNameFree(name: string, env?: NodeJS.ProcessEnv): Promise<void> {
  const existing = await readWorkload(name, env).catch(() => undefined)
  if (
    existing &&
    (existing.status === 'running' || existing.status === 'starting') &&
    existing.supervisorPid !== process.pid &&
    supervisorAlive(existing)
  ) {
    throw new ToolgateError(
      'ERR_CONFLICT',
      `workload "${name}" is already running (pid ${existing.supervisorPid}); stop it with 'toolgate stop ${name}' or choose another name`,
    )
  }
}

export async function startWorkload(
  spec: WorkloadSpec,
  deps: WorkloadDeps,
): Promise<RunningWorkload> {
  const {logger} = deps
  const env = deps.stateEnv
  await assertNameFree(spec.name, env)
  // What can be found wrong before anything starts is found now, with no state left behind
  // (issue 31): a busy port, a command that is not there.
  if (spec.proxyPort)
    await assertCanListen(
      {host: spec.flags.host ?? '127.0.0.1', port: spec.proxyPort},
      '--proxy-port',
    )
  if (spec.command?.[0] && !replacedBySandbox(spec.command, spec.sandbox !== undefined))
    assertCommandExists(spec.command[0], spec.env)
  const remembered = await rememberedPort(spec, env)
  const now = new Date().toISOString()
  let state: WorkloadState = {
    name: spec.name,
    status: 'starting',
    transport: spec.transport,
    baseUrl: '',
    url: '',
    host: spec.flags.host,
    port: remembered.port ?? 0,
    incomingAuth: false,
    supervisorPid: process.pid,
    ...startTimeOf(process.pid),
    ...(spec.command ? {command: spec.command} : {}),
    ...(spec.transport === 'stdio' ? {isolation: spec.isolation} : {}),
    ...(spec.sandbox ? {sandbox: spec.sandbox.profile.name} : {}),
    ...(spec.url ? {remoteUrl: spec.url} : {}),
    ...(spec.gateway ? {backends: spec.gateway.backends.map((b) => b.name)} : {}),
    ...(spec.secretNames.length ? {secrets: spec.secretNames} : {}),
    createdAt: now,
    updatedAt: now,
  }
  // Writes are chained: two in flight could otherwise rename in the wrong order, leaving the older
  // state on disk.
  let writes = Promise.resolve()
  const save = async (patch: Partial<WorkloadState>) => {
    state = {...state, ...patch}
    const snapshot = state
    writes = writes.then(() =>
      writeWorkload(snapshot, env).catch((err: Error) =>
        logger.error('cannot write workload state', {error: err.message}),
      ),
    )
    await writes
    return snapshot
  }
  await save({})

  let resolveFinished!: (s: WorkloadState) => void
  const finished = new Promise<WorkloadState>((r) => (resolveFinished = r))
  let pipeline: Pipeline | undefined
  let local: LocalServer | undefined
  let sandbox: PreparedSandbox | undefined
  let ending: Promise<WorkloadState> | undefined
  const end = (status: 'exited' | 'stopped', info?: ExitInfo) =>
    (ending ??= (async () => {
      // The server (and the bridge's streams) first: open client streams then end at once, and
      // the proxy closes without waiting out its grace period for them.
      const stopped = await local?.close(status === 'stopped' ? spec.stopTimeoutMs : 0)
      const exit = status === 'stopped' ? stopped : info
      await pipeline?.close().catch(() => undefined)
      await sandbox?.close().catch(() => undefined)
      const final = await save({
        status,
        ...(exit ? {exitCode: exit.code, exitSignal: exit.signal} : {}),
        serverPid: undefined,
        stoppedAt: new Date().toISOString(),
      })
      resolveFinished(final)
      return final
    })())

  try {
    let command = spec.command
    let serverEnv = spec.env
    if (command && spec.sandbox) {
      // Loaded only for a sandboxed workload (issue 11: the background process stays small).
      const {prepareSandbox} = await import('../sandbox/sandbox.ts')
      sandbox = await prepareSandbox(
        command,
        serverEnv,
        {workload: spec.name, ...spec.sandbox},
        {logger, onEgress: (decision) => pipeline?.metrics?.egress(decision)},
      )
      command = sandbox.command
      serverEnv = sandbox.env
      logger.info('server sandboxed', {profile: sandbox.profile.name})
    }
    if (spec.gateway) {
      // Loaded only for a gateway (issue 11: the background process stays small).
      const {startGateway} = await import('../gateway/gateway-server.ts')
      local = await startGateway(
        {
          name: spec.name,
          config: spec.gateway,
          requestTimeoutMs: spec.requestTimeoutMs,
          connectTimeoutMs: Math.min(spec.startupTimeoutMs, 10_000),
          maxBodyBytes: spec.flags['max-request-body-size'] || 8 * 1024 * 1024,
        },
        {logger},
      )
    }
    if (command) {
      local = await startLocalServer(
        {
          transport: spec.transport as 'stdio' | 'streamable-http' | 'sse',
          command,
          env: serverEnv,
          ...(spec.targetPort !== undefined ? {targetPort: spec.targetPort} : {}),
          requestTimeoutMs: spec.requestTimeoutMs,
          maxBodyBytes: spec.flags['max-request-body-size'] || 8 * 1024 * 1024,
          restart: spec.restart,
          startupTimeoutMs: spec.startupTimeoutMs,
          isolation: spec.isolation,
          idleTimeoutMs: spec.idleTimeoutMs,
          maxProcesses: spec.maxProcesses,
          stopTimeoutMs: spec.stopTimeoutMs,
          channel: sandbox?.channel,
        },
        {
          logger,
          serverLog: deps.serverLog,
          ...(deps.echo ? {echo: deps.echo} : {}),
          onStarted: (pid) => void (state.status === 'running' && save({serverPid: pid})),
          onExited: (info, restarting) => {
            if (restarting) void save({serverPid: undefined, lastExitCode: info.code})
            else void end('exited', info)
          },
          onProcesses: (processes) => void (ending || save({processes})),
        },
      )
    }
    const target = local?.targetUri ?? spec.url
    if (!target) throw new ToolgateError('ERR_USAGE', 'give a server command after -- or --url')
    pipeline = await startPipeline(
      spec.name,
      {
        ...spec.flags,
        'target-uri': target,
        ...(spec.proxyPort !== undefined ? {port: spec.proxyPort} : {}),
        ...(remembered.port !== undefined ? {port: remembered.port} : {}),
      },
      spec.gateway
        ? {...deps.pipeline, authzResourceAttributes: backendAttribute(spec.gateway.backends)}
        : deps.pipeline,
      {
        ...(local?.targetSocketPath ? {targetSocketPath: local.targetSocketPath} : {}),
        ...(local?.targetDispatcher ? {targetDispatcher: local.targetDispatcher} : {}),
        portFlag: '--proxy-port',
        // A remote is forwarded to at its origin, paths unchanged: clients use the remote's own
        // path on the proxy (remoteClientUrl). Its full URL still drives remote-auth discovery.
        ...(spec.url ? {targetUri: new URL(new URL(spec.url).origin)} : {}),
        // The proxy closes after the server stopped: nothing upstream is left to wait for, so a
        // client connection that lingers is not worth the default 10 s grace.
        drainMs: 1_000,
      },
    )
  } catch (err) {
    await local?.close(2_000).catch(() => undefined)
    await sandbox?.close().catch(() => undefined)
    // A server that died while starting has already recorded its exit status (end()).
    if (ending) await ending
    await save({
      status: 'exited',
      error: (err as Error).message,
      serverPid: undefined,
    })
    throw err
  }
  const {proxy, config} = pipeline
  if (pipeline.metrics && local) {
    const server = local
    pipeline.metrics.watch('processes', () => server.processes())
    // Behind the bridge the sessions are the bridge's, not the proxy's.
    if (server.sessions() !== undefined) pipeline.metrics.watch('sessions', () => server.sessions())
  }
  const path = spec.transport === 'sse' ? '/sse' : '/mcp'
  await save({
    status: ending ? state.status : 'running',
    baseUrl: proxy.url,
    url: spec.transport === 'remote' ? remoteClientUrl(proxy.url, spec.url!) : proxy.url + path,
    port: proxy.port,
    incomingAuth: incomingAuthEnabled(config.oidc),
    serverPid: local?.currentPid(),
  })
  await followClients(spec.name, state, remembered.movedFrom, {logger, env, save})
  return {
    state,
    pipeline,
    finished,
    login: async () => {
      await pipeline.login()
      if (!ending) await save({ready: true})
    },
    stop: () => end('stopped'),
  }
}

/**
 * The port this workload had last time, so the URLs clients saved stay valid across `stop`/`run`
 * (issue 33); `--proxy-port` wins. A remembered port that is taken now is given up (`movedFrom`).
 */
async function rememberedPort(
  spec: WorkloadSpec,
  env: NodeJS.ProcessEnv | undefined,
): Promise<{port?: number; movedFrom?: number}> {
  if (spec.proxyPort !== undefined) return {}
  const previous = await readWorkload(spec.name, env).catch(() => undefined)
  if (!previous?.port) return {}
  const addr = {host: spec.flags.host ?? '127.0.0.1', port: previous.port}
  const free = await assertCanListen(addr, 'remembered port').then(
    () => true,
    () => false,
  )
  return free ? {port: previous.port} : {movedFrom: previous.port}
}

/**
 * Said loudly when the workload had to move: the log, the state (`run` prints it), and every HTTP
 * entry `client add` wrote for it moves along. Entries are checked on every start, so one a crash
 * left behind catches up too.
 */
async function followClients(
  name: string,
  state: WorkloadState,
  movedFrom: number | undefined,
  deps: {
    logger: Logger
    env: NodeJS.ProcessEnv | undefined
    save: (patch: Partial<WorkloadState>) => Promise<WorkloadState>
  },
): Promise<void> {
  const {logger} = deps
  if (movedFrom !== undefined)
    logger.warn(
      `port ${movedFrom} of the last run is taken; ${name} now listens on ${state.port}`,
      {
        from: movedFrom,
        to: state.port,
      },
    )
  // Loaded only when needed: the background process stays small (issue 11). Whatever goes wrong
  // here is logged; the workload runs on.
  const results = await import('../clients/client-ops.ts')
    .then(({moveWorkloadEntries}) => moveWorkloadEntries(name, state.url, deps.env ?? process.env))
    .catch((err: Error) => {
      logger.error('cannot update client entries', {error: err.message})
      return []
    })
  for (const r of results) {
    if (r.error)
      logger.error('client entry not updated', {
        client: r.client,
        file: r.file,
        error: r.error.message,
      })
    else if (r.change === 'updated')
      logger.warn('client entry moved to the new URL', {client: r.client, file: r.file})
  }
  if (movedFrom !== undefined)
    await deps.save({
      portMoved: {
        from: movedFrom,
        to: state.port,
        clientEntries: results.filter((r) => r.change === 'updated').length,
      },
    })
}

/** A remote workload keeps the remote's path: `--url https://h/api/mcp` → `http://127.0.0.1:P/api/mcp`. */
function remoteClientUrl(base: string, remote: string): string {
  const u = new URL(remote)
  return base + (u.pathname === '/' ? '' : u.pathname) + u.search
}

function startTimeOf(pid: number): {supervisorStart?: string} {
  const start = processStartTime(pid)
  return start === undefined ? {} : {supervisorStart: start}
}
