import {Agent, type Dispatcher} from 'undici'
import {privateSocket, type PrivateSocket} from '../http/private-socket.ts'
import {routedDispatcher} from '../network/dispatcher.ts'
import {currentNetwork} from '../network/settings.ts'
import {startPrepared, type Pipeline, type PipelineDeps, type PreparedPipeline} from './pipeline.ts'

/**
 * How this process talks to an MCP server as a client (`proxy stdio`, the gateway's backends):
 * straight to it, or — when credentials or headers are added on the way — through the request
 * pipeline listening on a private unix socket only this process reaches, so the user's
 * credentials are never offered on a port other local users reach.
 */

// A head within 5 minutes (a JSON answer comes only when the tool is done); an SSE body may idle
// as long as the server keeps the session (it sends keep-alives, the SDK reconnects otherwise).
export const CLIENT_AGENT_LIMITS = {headersTimeout: 300_000, bodyTimeout: 0}

/** Straight to the server: through the outbound proxy when the network settings say so (issue 34). */
export function directAgent(): Dispatcher {
  const network = currentNetwork()
  const agent = new Agent({
    ...CLIENT_AGENT_LIMITS,
    connect: {timeout: 10_000, ...(network.ca ? {ca: network.ca} : {})},
  })
  return routedDispatcher(agent, network, {
    ca: network.ca,
    connectTimeout: 10_000,
    ...CLIENT_AGENT_LIMITS,
  })
}

export interface PrivateHop {
  socket: PrivateSocket
  pipeline: Pipeline
  agent: Agent
}

/** The pipeline on a private unix socket, and an HTTP agent that reaches it. */
export async function privateHop(
  prepared: PreparedPipeline,
  deps: PipelineDeps,
  remote: URL,
  label: string,
): Promise<PrivateHop> {
  const socket = await privateSocket(label)
  const pipeline = await startPrepared(prepared, deps, {
    listenSocketPath: socket.path,
    targetUri: new URL(remote.origin),
    drainMs: 1_000,
  }).catch(async (err: unknown) => {
    await socket.remove()
    throw err
  })
  return {
    socket,
    pipeline,
    agent: new Agent({...CLIENT_AGENT_LIMITS, connect: {socketPath: socket.path}}),
  }
}
