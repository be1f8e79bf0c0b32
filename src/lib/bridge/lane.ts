import type {Readable, Writable} from 'node:stream'
import type {Logger} from '../log/logger.ts'
import {isRecord} from '../mcp/json-rpc.ts'
import {readLines} from './line-reader.ts'
import {Multiplexer, type ClientSink, type Message} from './multiplexer.ts'
import type {JsonRpcId} from '../mcp/json-rpc.ts'
import type {PrincipalKey} from '../sessions/principal-key.ts'
import {LATEST_PROTOCOL_VERSION} from '../mcp/protocol-versions.ts'

/**
 * One stdio server process as the bridge sees it: its multiplexer, and the pipes it is attached
 * to while the process runs. `run --isolation shared` has one lane for the workload's server;
 * `principal` and `session` have one per process (isolated-lanes.ts).
 */

/** Bytes written to the server's stdin and not yet read by it, past which requests are refused. */
export const MAX_STDIN_BACKLOG = 64 * 1024 * 1024

export interface StdioPeer {
  stdin: Writable
  stdout: Readable
}

export interface LaneOptions {
  logger: Logger
  requestTimeoutMs: number
  /** Longest stdout line accepted from the server. */
  maxLineBytes?: number
  /** Where stdout lines that are not JSON-RPC go (the server's log); they are never forwarded. */
  onNoise: (line: string) => void
}

export class Lane {
  readonly mux: Multiplexer
  #stdin: Writable | undefined
  readonly #options: LaneOptions

  constructor(options: LaneOptions) {
    this.#options = options
    this.mux = new Multiplexer({
      logger: options.logger,
      requestTimeoutMs: options.requestTimeoutMs,
      send: (message: Message) => this.#send(message),
    })
  }

  get attached(): boolean {
    return this.#stdin !== undefined
  }

  /** Connects a (re)started server process. */
  attach(peer: StdioPeer): void {
    const {logger, onNoise} = this.#options
    this.#stdin = peer.stdin
    peer.stdin.on('error', (err) => logger.debug('server stdin closed', {error: err.message}))
    readLines(
      peer.stdout,
      (line) => {
        let value: unknown
        try {
          value = JSON.parse(line)
        } catch {
          return onNoise(line)
        }
        const messages = Array.isArray(value) ? value : [value]
        for (const m of messages) {
          if (isRecord(m) && m.jsonrpc === '2.0') this.mux.fromServer(m)
          else onNoise(line)
        }
      },
      {
        maxLineBytes: this.#options.maxLineBytes ?? 64 * 1024 * 1024,
        onOversize: (bytes) => logger.warn('dropped an oversized line from the server', {bytes}),
      },
    )
  }

  /** The server process ended: clients get errors, sessions end. */
  detach(reason: string): void {
    this.#stdin = undefined
    this.mux.serverGone(reason)
  }

  #send(message: Message): boolean {
    const stdin = this.#stdin
    if (!stdin?.writable) return false
    // A server that stops reading its stdin: refuse rather than buffer without bound.
    if (stdin.writableLength > MAX_STDIN_BACKLOG) return false
    // Messages written in one event-loop turn leave in one write: fewer syscalls and wake-ups.
    if (!stdin.writableCorked) {
      stdin.cork()
      process.nextTick(() => stdin.uncork())
    }
    stdin.write(JSON.stringify(message) + '\n')
    return true
  }
}

/** What the bridge tells the server about itself when it initializes it (see initializeServer). */
export const BRIDGE_CLIENT = {
  protocolVersion: LATEST_PROTOCOL_VERSION,
  // What the bridge can route to a client (the client that caused a request answers it).
  capabilities: {sampling: {}, elicitation: {}},
  clientInfo: {name: 'toolgate', version: '1'},
}

/**
 * Initializes the server on `lane` and waits for its answer, the server's exit, or the timeout
 * (issue 31: a program that is not an MCP server used to be reported running). Resolves undefined
 * when the server answered; otherwise with why not.
 */
export async function serverAnswers(
  lane: Lane,
  exited: Promise<unknown>,
  timeoutMs: number,
): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined
  const outcome = await Promise.race([
    lane.mux
      .initializeServer(BRIDGE_CLIENT)
      .then((m) =>
        'result' in m
          ? undefined
          : `it answered initialize with an error: ${JSON.stringify(m.error)}`,
      ),
    exited.then(() => 'it exited first'),
    new Promise<string>((resolve) => {
      timer = setTimeout(
        () => resolve(`no answer within ${Math.round(timeoutMs / 1000)} s (--startup-timeout)`),
        timeoutMs,
      )
    }),
  ])
  clearTimeout(timer)
  return outcome
}

/** A lane could not be given now (every allowed process is busy): 503 with Retry-After. */
export class LaneRefused extends Error {
  readonly retryAfterSeconds: number
  constructor(message: string, retryAfterSeconds: number) {
    super(message)
    this.retryAfterSeconds = retryAfterSeconds
  }
}

/**
 * What a bridge session talks to: a stdio server's multiplexer, or a gateway's router (issue 37).
 * The bridge's HTTP transports, sessions and quotas are the same for both.
 */
export interface SessionMux {
  open(id: string, sink: ClientSink, owner: PrincipalKey): void
  close(id: string, reason?: string): void
  /** The client stopped waiting for one of its requests (its answer stream closed). */
  abandon(id: string, clientId: JsonRpcId, reason?: string): void
  fromClient(sessionId: string, message: Message): void
}

export interface BridgeLane {
  readonly mux: SessionMux
}

/** Where the bridge's sessions get their lane. */
export interface LaneSource {
  /** Why no new request can be served now (the shared server is not running), else undefined. */
  unavailable(): string | undefined
  /** The lane for a new session of `owner`; may start a process. Throws LaneRefused. */
  acquire(owner: string, sessionId: string): Promise<BridgeLane>
  /** A session given by acquire() ended. */
  release(lane: BridgeLane, sessionId: string): void
  close(): Promise<void>
}

/** `--isolation shared`: every session on the one lane of the workload's server process. */
export class SharedLane implements LaneSource {
  readonly lane: Lane

  constructor(options: LaneOptions) {
    this.lane = new Lane(options)
  }

  unavailable(): string | undefined {
    return this.lane.attached ? undefined : 'the MCP server is not running'
  }

  async acquire(): Promise<Lane> {
    return this.lane
  }

  release(): void {}

  async close(): Promise<void> {}
}
