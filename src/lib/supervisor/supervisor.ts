import {ToolgateError} from '../errors.ts'
import type {Logger} from '../log/logger.ts'
import {stopServer, type ExitInfo, type ServerProcess} from './server-process.ts'

/**
 * Keeps one server process and decides what happens when it exits: by default it stays exited
 * (contract §5: never silently restarted forever); `--restart on-failure[:N]` restarts it after a
 * non-zero exit, at most N times (default 5), waiting 1 s, 2 s, 4 s … (at most 30 s) in between.
 */

export interface RestartPolicy {
  maxRestarts: number
}

export const DEFAULT_ON_FAILURE_RESTARTS = 5

export function parseRestartPolicy(text: string): RestartPolicy {
  if (text === 'no' || text === 'never') return {maxRestarts: 0}
  const m = /^on-failure(?::(\d{1,4}))?$/.exec(text)
  if (!m) {
    throw new ToolgateError(
      'ERR_USAGE',
      `--restart: "${text.slice(0, 40)}" is not a policy; use no, on-failure or on-failure:N`,
    )
  }
  return {maxRestarts: m[1] === undefined ? DEFAULT_ON_FAILURE_RESTARTS : Number(m[1])}
}

export interface SupervisorOptions {
  spawn: () => Promise<ServerProcess>
  policy: RestartPolicy
  logger: Logger
  onStarted: (server: ServerProcess) => void
  /** Every exit; `restarting` says whether another process follows. */
  onExited: (info: ExitInfo, restarting: boolean) => void
  backoffMs?: (attempt: number) => number
}

export class Supervisor {
  private server: ServerProcess | undefined
  private restarts = 0
  private stopping = false
  private resolveFinished!: (info: ExitInfo) => void
  /** Resolves when the server has exited for good (no restart follows), or after stop(). */
  readonly finished = new Promise<ExitInfo>((resolve) => (this.resolveFinished = resolve))

  private readonly options: SupervisorOptions

  constructor(options: SupervisorOptions) {
    this.options = options
  }

  get current(): ServerProcess | undefined {
    return this.server
  }

  /** Starts the first process; a command that cannot be started at all throws here. */
  async start(): Promise<void> {
    await this.launch()
  }

  async stop(timeoutMs: number): Promise<ExitInfo | undefined> {
    this.stopping = true
    const server = this.server
    if (!server) return undefined
    return stopServer(server, timeoutMs)
  }

  private async launch(): Promise<void> {
    const server = await this.options.spawn()
    this.server = server
    this.options.onStarted(server)
    void server.exited.then((info) => this.exited(server, info))
  }

  private exited(server: ServerProcess, info: ExitInfo): void {
    if (this.server === server) this.server = undefined
    const failed = info.code !== 0
    const restarting = !this.stopping && failed && this.restarts < this.options.policy.maxRestarts
    this.options.onExited(info, restarting)
    if (!restarting) return this.resolveFinished(info)
    this.restarts++
    const delay = (this.options.backoffMs ?? backoff)(this.restarts)
    this.options.logger.warn('server exited; restarting', {
      code: info.code,
      signal: info.signal,
      attempt: this.restarts,
      of: this.options.policy.maxRestarts,
      delayMs: delay,
    })
    setTimeout(() => {
      if (this.stopping) return this.resolveFinished(info)
      this.launch().catch((err: Error) => {
        this.options.logger.error('server restart failed', {error: err.message})
        this.resolveFinished(info)
      })
    }, delay)
  }
}

function backoff(attempt: number): number {
  return Math.min(30_000, 1000 * 2 ** (attempt - 1))
}
