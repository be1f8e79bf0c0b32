import type {Readable} from 'node:stream'
import type {FetchLike} from '@modelcontextprotocol/sdk/shared/transport.js'
import {fetch as undiciFetch} from 'undici'
import {ToolgateError} from '../errors.ts'
import {directAgent, privateHop} from '../proxy/outbound-hop.ts'
import type {Logger} from '../log/logger.ts'
import {addsCredentials, preparePipeline, type PipelineFlags} from '../proxy/pipeline.ts'
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
  /** How long a workload target may stay gone (stop/run, restart) before a request fails. */
  reconnectTimeoutMs?: number
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
  const prepared = await preparePipeline(
    'stdio',
    {...input.flags, 'target-uri': remote.href} as PipelineFlags,
    {logger, json: input.json, isTTY: input.isTTY, write: input.writeErr},
  )
  // Nothing to add on the way out (no token, no header): talk to the server directly, one HTTP hop
  // less. Otherwise through the pipeline, on a socket only this process reaches.
  const deps = {logger, json: input.json, isTTY: input.isTTY, write: input.writeErr}
  const hop = addsCredentials(prepared)
    ? await privateHop(prepared, deps, remote, 'stdio')
    : undefined
  const agent = hop?.agent ?? directAgent()
  const fetch = ((url: string | URL, init?: RequestInit) =>
    undiciFetch(url, {...(init as object), dispatcher: agent})) as unknown as FetchLike
  const local = hop ? new URL(remote.pathname + remote.search, 'http://localhost') : remote
  // The upstream delivers to the relay, which needs the upstream: tied through this holder.
  const to: {relay?: StdioRelay} = {}
  // A workload reached directly is followed: asked where it is on every reconnect, so a client
  // survives `stop` + `run` and restarts (issue 33). Through the pipeline the target is fixed.
  const workload = input.target.includes('://') || hop ? undefined : input.target
  const upstream = new UpstreamSession({
    url: local,
    kind: input.transport,
    fetch,
    logger,
    onMessage: (m) => to.relay?.toClient(m),
    ...(workload
      ? {
          follow: {
            resolve: async () => {
              const state = await findRunningWorkload(workload)
              return {
                url: new URL(state.url),
                identity: `${state.supervisorPid}:${state.supervisorStart ?? ''}`,
              }
            },
            timeoutMs: input.reconnectTimeoutMs ?? 30_000,
          },
        }
      : {}),
  })
  const ready = hop?.pipeline.login() ?? Promise.resolve()
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
    await hop?.pipeline.close().catch(() => undefined)
    await agent.close().catch(() => undefined)
    await hop?.socket.remove()
  }
}
