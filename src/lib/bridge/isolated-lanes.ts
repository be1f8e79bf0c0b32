import {setTimeout as sleep} from 'node:timers/promises'
import type {Logger} from '../log/logger.ts'
import {principalLabel, type PrincipalKey} from '../sessions/principal-key.ts'
import type {ExitInfo, ServerProcess} from '../supervisor/server-process.ts'
import {Lane, LaneRefused, type BridgeLane, type LaneOptions, type LaneSource} from './lane.ts'

/**
 * `run --isolation principal|session` (issue 30): one stdio server process per authenticated
 * principal, or per client session, so nothing a server holds in memory — a conversation, a
 * cache, a log level — is shared between callers. A process starts on its owner's first
 * `initialize`, and stops `idleTimeoutMs` after its last session ended (`session`: at once).
 * At most `maxProcesses` run; past it an idle one is stopped to make room, and when none is idle
 * the new session gets 503 with Retry-After.
 *
 * One process is started when the workload starts, as the check that the command runs at all; it
 * waits, clean, for the first owner (or stops after the idle timeout).
 */

export type IsolationMode = 'shared' | 'principal' | 'session'

export interface IsolatedProcessInfo {
  pid: number | undefined
  /** The principal it serves ("anonymous" without incoming auth); absent while it waits unused. */
  principal?: string
  sessions: number
  startedAt: string
}

export interface IsolatedLanesOptions {
  mode: 'principal' | 'session'
  lane: LaneOptions
  /** Starts one server process with stdin/stdout pipes; rejects when it cannot start. */
  spawn: () => Promise<ServerProcess>
  /** Stops one (SIGTERM, then SIGKILL after the stop timeout). */
  stop: (server: ServerProcess) => Promise<ExitInfo>
  maxProcesses: number
  idleTimeoutMs: number
  logger: Logger
  /** A process exited; `owner` is undefined for the unused one. */
  onExit?: (server: ServerProcess, info: ExitInfo, owner: PrincipalKey | undefined) => void
  /** The set of processes changed (for the workload's state file and `list`). */
  onChange?: (processes: IsolatedProcessInfo[]) => void
}

interface Member {
  key: string | undefined
  owner: PrincipalKey | undefined
  lane: Lane
  server: ServerProcess
  sessions: Set<string>
  startedAt: Date
  idle: NodeJS.Timeout | undefined
  stopping: boolean
}

// A process that dies this soon after starting did not start (bad arguments, missing package).
const EARLY_EXIT_MS = 1_000

export class IsolatedLanes implements LaneSource {
  readonly #members = new Set<Member>()
  readonly #byKey = new Map<string, Member>()
  readonly #starting = new Map<string, Promise<Member>>()
  readonly #options: IsolatedLanesOptions
  #closed = false

  constructor(options: IsolatedLanesOptions) {
    this.#options = options
  }

  /**
   * Starts the first process and waits until it has survived its first second and `check` (the
   * server answers initialize) passes. Throws with `exit` or `why` otherwise.
   */
  async start(
    check: (lane: Lane, server: ServerProcess) => Promise<string | undefined>,
  ): Promise<void> {
    const member = await this.#spawn(undefined, undefined)
    const early = await Promise.race([
      member.server.exited,
      sleep(EARLY_EXIT_MS).then(() => undefined),
    ])
    if (early) throw Object.assign(new Error('exited while starting'), {exit: early})
    const why = await check(member.lane, member.server)
    if (why) {
      await this.#stop(member, 'it did not start')
      throw Object.assign(new Error(why), {why})
    }
    this.#idleLater(member)
  }

  unavailable(): string | undefined {
    return this.#closed ? 'the workload is stopping' : undefined
  }

  processes(): IsolatedProcessInfo[] {
    return [...this.#members].map((m) => ({
      pid: m.server.child.pid,
      ...(m.owner !== undefined ? {principal: principalLabel(m.owner)} : {}),
      sessions: m.sessions.size,
      startedAt: m.startedAt.toISOString(),
    }))
  }

  async acquire(owner: PrincipalKey, sessionId: string): Promise<Lane> {
    const key = this.#options.mode === 'principal' ? owner : sessionId
    let member = this.#byKey.get(key)
    if (!member) {
      let starting = this.#starting.get(key)
      if (!starting) {
        starting = this.#claim(key, owner).finally(() => this.#starting.delete(key))
        this.#starting.set(key, starting)
      }
      member = await starting
    }
    clearTimeout(member.idle)
    member.idle = undefined
    member.sessions.add(sessionId)
    this.#changed()
    return member.lane
  }

  release(lane: BridgeLane, sessionId: string): void {
    for (const member of this.#members) {
      if (member.lane !== lane || !member.sessions.delete(sessionId)) continue
      this.#changed()
      if (member.sessions.size > 0) return
      if (this.#options.mode === 'session') void this.#stop(member, 'its session ended')
      else this.#idleLater(member)
      return
    }
  }

  async close(): Promise<void> {
    this.#closed = true
    await Promise.all([...this.#members].map((m) => this.#stop(m, 'the workload stopped')))
  }

  /** A process for `key`: the unused one if any, else a new one within the process limit. */
  async #claim(key: string, owner: PrincipalKey): Promise<Member> {
    const unused = [...this.#members].find((m) => m.owner === undefined && !m.stopping)
    if (unused) {
      unused.key = key
      unused.owner = owner
      this.#byKey.set(key, unused)
      this.#options.logger.info('server process assigned', {
        pid: unused.server.child.pid,
        principal: principalLabel(owner),
      })
      return unused
    }
    // Called before this start is recorded in #starting: the others in there are counted.
    const live = [...this.#members].filter((m) => !m.stopping).length + this.#starting.size
    if (live >= this.#options.maxProcesses) {
      const idle = [...this.#members].find((m) => m.sessions.size === 0 && !m.stopping)
      if (!idle) {
        throw new LaneRefused(
          `all ${this.#options.maxProcesses} server processes are in use (--max-processes)`,
          Math.max(1, Math.ceil(this.#options.idleTimeoutMs / 1000 / 4)),
        )
      }
      await this.#stop(idle, 'room for another caller (--max-processes)')
    }
    return this.#spawn(key, owner)
  }

  async #spawn(key: string | undefined, owner: PrincipalKey | undefined): Promise<Member> {
    if (this.#closed) throw new LaneRefused('the workload is stopping', 5)
    const server = await this.#options.spawn()
    const lane = new Lane(this.#options.lane)
    lane.attach({stdin: server.child.stdin!, stdout: server.child.stdout!})
    const member: Member = {
      key,
      owner,
      lane,
      server,
      sessions: new Set(),
      startedAt: new Date(),
      idle: undefined,
      stopping: false,
    }
    this.#members.add(member)
    if (key !== undefined) this.#byKey.set(key, member)
    this.#options.logger.info('server process started', {
      pid: server.child.pid,
      ...(owner !== undefined ? {principal: principalLabel(owner)} : {}),
    })
    void server.exited.then((info) => {
      clearTimeout(member.idle)
      this.#members.delete(member)
      if (member.key !== undefined && this.#byKey.get(member.key) === member)
        this.#byKey.delete(member.key)
      lane.detach(`MCP server process ${server.child.pid} exited`)
      this.#options.onExit?.(server, info, member.owner)
      this.#changed()
    })
    this.#changed()
    return member
  }

  #idleLater(member: Member): void {
    clearTimeout(member.idle)
    member.idle = setTimeout(
      () => void this.#stop(member, 'idle (--idle-timeout)'),
      this.#options.idleTimeoutMs,
    )
    member.idle.unref()
  }

  async #stop(member: Member, why: string): Promise<void> {
    if (member.stopping) return void (await member.server.exited)
    member.stopping = true
    clearTimeout(member.idle)
    if (member.key !== undefined && this.#byKey.get(member.key) === member)
      this.#byKey.delete(member.key)
    this.#options.logger.info('stopping server process', {pid: member.server.child.pid, why})
    await this.#options.stop(member.server)
  }

  #changed(): void {
    this.#options.onChange?.(this.processes())
  }
}
