import type {Readable} from 'node:stream'
import type {FetchLike} from '@modelcontextprotocol/sdk/shared/transport.js'
import {Agent, fetch as undiciFetch} from 'undici'
import {ToolgateError} from '../errors.ts'
import {privateSocket} from '../http/private-socket.ts'
import type {Logger} from '../log/logger.ts'
import {startPipeline, type PipelineFlags} from '../proxy/pipeline.ts'
import {findRunningWorkload, validateWorkloadName} from '../workloads/state.ts'
import {StdioRelay} from './relay.ts'
import {UpstreamSession, type TransportKind} from './upstream-session.ts'

/**
 * `toolgate proxy stdio <workload-or-URL>`: the client's stdio on one side; on the other, the same
 * request pipeline as `toolgate proxy` (outgoing bearer / OAuth login / token exchange / header
 * injection, one 401 retry with a refreshed token) listening on a private unix socket that only
 * this process uses, so the user's credentials are never offered on a port other local users reach.
 */

export interface StdioRelayInput {
  target: string
  transport: TransportKind
  flags: Omit<PipelineFlags, 'target-uri'>
  logger: Logger
  json: boolean
  isTTY: boolean
  input: Readable
  /** One protocol line to stdout. */
  writeLine: (line: string) => void
  /** Human progress (the login URL) to stderr. */
  writeErr: (text: string) => void
  /** Aborted by SIGINT/SIGTERM. */
  signal: AbortSignal
}

/** A URL, or the name of a running workload (its client URL). */
export async function resolveTarget(target: string): Promise<URL> {
  if (target.includes('://')) {
    let url: URL
    try {
      url = new URL(target)
    } catch {
      throw new ToolgateError('ERR_USAGE', `"${target.slice(0, 120)}" is not a URL`)
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw new ToolgateError('ERR_USAGE', `${url.protocol} URLs are not supported: use http(s)`)
    return url
  }
  return new URL((await findRunningWorkload(validateWorkloadName(target))).url)
}

export async function runStdioRelay(input: StdioRelayInput): Promise<void> {
  const {logger} = input
  const remote = await resolveTarget(input.target)
  const socket = await privateSocket('stdio')
  const pipeline = await startPipeline(
    'stdio',
    {...input.flags, 'target-uri': remote.href} as PipelineFlags,
    {logger, json: input.json, isTTY: input.isTTY, write: input.writeErr},
    {listenSocketPath: socket.path, targetUri: new URL(remote.origin), drainMs: 1_000},
  ).catch(async (err: unknown) => {
    await socket.remove()
    throw err
  })
  const agent = new Agent({connect: {socketPath: socket.path}})
  const fetch = ((url: string | URL, init?: RequestInit) =>
    undiciFetch(url, {...(init as object), dispatcher: agent})) as unknown as FetchLike
  const local = new URL(remote.pathname + remote.search, 'http://localhost')
  // The upstream delivers to the relay, which needs the upstream: tied through this holder.
  const to: {relay?: StdioRelay} = {}
  const upstream = new UpstreamSession({
    url: local,
    kind: input.transport,
    fetch,
    logger,
    onMessage: (m) => to.relay?.toClient(m),
  })
  const ready = pipeline.login()
  const relay = new StdioRelay({
    input: input.input,
    write: input.writeLine,
    upstream,
    logger,
    ready,
  })
  to.relay = relay
  const stopped = new Promise<void>((resolve) =>
    input.signal.addEventListener('abort', () => resolve(), {once: true}),
  )
  try {
    const failed = ready.then(() => new Promise<never>(() => undefined))
    await Promise.race([relay.inputEnded, stopped, failed])
    await relay.drain()
  } finally {
    await upstream.close().catch(() => undefined)
    await pipeline.close().catch(() => undefined)
    await agent.close().catch(() => undefined)
    await socket.remove()
  }
}
