import type {FetchLike} from '@modelcontextprotocol/sdk/shared/transport.js'
import {Agent, type Dispatcher} from 'undici'
import {requestFetch} from '../http/request-fetch.ts'
import type {Logger} from '../log/logger.ts'
import {BEARER_TOKEN_ENV} from '../proxy/options.ts'
import {
  CLIENT_AGENT_LIMITS,
  directAgent,
  privateHop,
  type PrivateHop,
} from '../proxy/outbound-hop.ts'
import {addsCredentials, preparePipeline, type PipelineFlags} from '../proxy/pipeline.ts'
import {findRunningWorkload} from '../workloads/state.ts'
import type {BackendConfig} from './config.ts'

/**
 * Where a gateway backend is and how to reach it (issue 37). A local workload is asked where it
 * listens on every connect (its state file), so it is followed across `stop`/`run` and port moves;
 * a URL backend with credentials is reached through the request pipeline on a private socket
 * (proxy/outbound-hop.ts), exactly as `proxy stdio` does, so its token never leaves this process.
 */

export interface ResolvedTarget {
  url: URL
  kind: 'streamable-http' | 'sse'
}

export interface BackendTarget {
  /** Where to connect now; rejects when a followed workload is not running. */
  resolve(): Promise<ResolvedTarget>
  /** What reaches it (a loopback agent, the outbound proxy, or the private credentials hop). */
  dispatcher: Dispatcher
  /** The same, as a fetch (the SDK's legacy SSE transport takes one). */
  fetch: FetchLike
  close(): Promise<void>
}

// Workloads listen on this machine; no outbound proxy applies. Connects are quick or refused.
const LOCAL_AGENT = {...CLIENT_AGENT_LIMITS, connect: {timeout: 5_000}}

export async function openBackendTarget(
  backend: BackendConfig,
  deps: {logger: Logger},
): Promise<BackendTarget> {
  if (backend.workload !== undefined) {
    const workload = backend.workload
    const agent = new Agent(LOCAL_AGENT)
    return {
      async resolve() {
        const state = await findRunningWorkload(workload)
        return {
          url: new URL(state.url),
          kind: state.transport === 'sse' ? 'sse' : 'streamable-http',
        }
      },
      dispatcher: agent,
      fetch: requestFetch(agent),
      close: () => agent.close(),
    }
  }
  const remote = new URL(backend.url as string)
  // The process's own bearer-token variable is for `proxy`, never for every backend of a gateway.
  const env = {...process.env}
  delete env[BEARER_TOKEN_ENV]
  const pipelineDeps = {
    logger: deps.logger,
    json: false,
    isTTY: false,
    write: (text: string) => deps.logger.info(text.trimEnd()),
    env,
  }
  const prepared = await preparePipeline(
    `backend ${backend.name}`,
    {
      ...backend.auth,
      host: '127.0.0.1',
      'max-request-body-size': 8 * 1024 * 1024,
      'target-uri': remote.href,
    } as PipelineFlags,
    pipelineDeps,
  )
  let hop: PrivateHop | undefined
  if (addsCredentials(prepared)) hop = await privateHop(prepared, pipelineDeps, remote, 'gateway')
  const dispatcher = hop?.agent ?? directAgent()
  const url = hop ? new URL(remote.pathname + remote.search, 'http://localhost') : remote
  return {
    resolve: async () => ({url, kind: backend.transport}),
    dispatcher,
    fetch: requestFetch(dispatcher),
    async close() {
      await dispatcher.close().catch(() => undefined)
      await hop?.pipeline.close().catch(() => undefined)
      await hop?.socket.remove()
    },
  }
}
