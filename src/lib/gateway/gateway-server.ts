import {startBridge} from '../bridge/bridge-server.ts'
import type {BridgeLane, LaneSource, SessionMux} from '../bridge/lane.ts'
import type {ClientSink, Message} from '../bridge/multiplexer.ts'
import type {JsonRpcId} from '../mcp/json-rpc.ts'
import type {Logger} from '../log/logger.ts'
import {versionInfo} from '../version.ts'
import type {LocalServer} from '../workloads/local-server.ts'
import {openBackendTarget, type BackendTarget} from './backend-target.ts'
import type {GatewayConfig} from './config.ts'
import {GatewaySession, type GatewayBackend, type SessionDeps} from './gateway-session.ts'
import {BackendHealth} from './health.ts'

/**
 * The upstream of `toolgate gateway` (issue 37): the stdio bridge's HTTP face (sessions, quotas,
 * streams) with a router in place of a server process, reached by the workload's own front in this
 * process (in-process-dispatcher.ts: no socket, nothing else can reach it). The front — incoming
 * auth, Cedar, audit, metrics — is the same pipeline as every workload's.
 */

export interface GatewaySpec {
  name: string
  config: GatewayConfig
  requestTimeoutMs: number
  connectTimeoutMs: number
  maxBodyBytes: number
}

/** Every client session of the gateway, each with its own backend sessions. */
export class GatewayRouter implements SessionMux {
  readonly #sessions = new Map<string, GatewaySession>()
  readonly #deps: SessionDeps

  constructor(deps: SessionDeps) {
    this.#deps = deps
  }

  get sessionCount(): number {
    return this.#sessions.size
  }

  open(id: string, sink: ClientSink): void {
    this.#sessions.set(id, new GatewaySession(id, sink, this.#deps))
  }

  close(id: string): void {
    const session = this.#sessions.get(id)
    this.#sessions.delete(id)
    void session?.close()
  }

  abandon(id: string, clientId: JsonRpcId, reason?: string): void {
    this.#sessions.get(id)?.abandon(clientId, reason)
  }

  fromClient(id: string, message: Message): void {
    this.#sessions.get(id)?.fromClient(message)
  }

  async closeAll(): Promise<void> {
    const sessions = [...this.#sessions.values()]
    this.#sessions.clear()
    await Promise.all(sessions.map((s) => s.close()))
  }
}

class GatewayLanes implements LaneSource {
  readonly #lane: BridgeLane
  readonly #close: () => Promise<void>

  constructor(router: GatewayRouter, close: () => Promise<void>) {
    this.#lane = {mux: router}
    this.#close = close
  }

  // Always: a backend that is down is the gateway's to report, per call (gateway-session.ts).
  unavailable(): undefined {
    return undefined
  }

  async acquire(): Promise<BridgeLane> {
    return this.#lane
  }

  release(): void {}

  close(): Promise<void> {
    return this.#close()
  }
}

export async function startGateway(
  spec: GatewaySpec,
  deps: {logger: Logger},
): Promise<LocalServer> {
  const {logger} = deps
  const targets: BackendTarget[] = []
  const backends: GatewayBackend[] = []
  try {
    for (const config of spec.config.backends) {
      // A URL backend's credentials are checked here (a missing secret, an unreadable token
      // file): the gateway refuses to start rather than run with a backend it cannot reach.
      const target = await openBackendTarget(config, {logger})
      targets.push(target)
      backends.push({config, target, health: new BackendHealth(config, target, {logger})})
    }
  } catch (err) {
    await Promise.all(targets.map((t) => t.close()))
    throw err
  }
  const router = new GatewayRouter({
    backends,
    pageSize: spec.config.pageSize,
    logger,
    requestTimeoutMs: spec.requestTimeoutMs,
    connectTimeoutMs: spec.connectTimeoutMs,
    serverInfo: {name: `toolgate-gateway ${spec.name}`, version: versionInfo().version},
  })
  const lanes = new GatewayLanes(router, async () => {
    await router.closeAll()
    for (const b of backends) b.health.close()
    await Promise.all(targets.map((t) => t.close()))
  })
  const bridge = await startBridge(
    {logger, maxBodyBytes: spec.maxBodyBytes, inProcess: true},
    lanes,
  )
  logger.info('gateway ready', {backends: backends.map((b) => b.config.name).join(',')})
  return {
    targetUri: 'http://localhost',
    targetDispatcher: bridge.dispatcher!,
    currentPid: () => undefined,
    processes: () => 0,
    sessions: () => bridge.sessions,
    async close() {
      await bridge.close()
      return undefined
    },
  }
}
