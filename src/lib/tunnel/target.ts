import {ToolgateError} from '../errors.ts'
import {findRunningWorkload, validateWorkloadName} from '../workloads/state.ts'

/**
 * What a tunnel publishes: a local URL without a path (a proxy, a server), or a running workload by
 * name — and whether it checks incoming tokens, since a tunnel exposes exactly what TARGET enforces.
 */
export interface TunnelTarget {
  url: URL
  /** true/false when known (a workload records it); undefined for a URL, probed then. */
  incomingAuth: boolean | undefined
  workload?: string
}

export async function resolveTunnelTarget(target: string): Promise<TunnelTarget> {
  if (!target.includes('://')) {
    const state = await findRunningWorkload(validateWorkloadName(target))
    return {url: new URL(state.baseUrl), incomingAuth: state.incomingAuth, workload: state.name}
  }
  let url: URL
  try {
    url = new URL(target)
  } catch {
    throw new ToolgateError(
      'ERR_USAGE',
      `TARGET "${target.slice(0, 120)}" is not a URL or a workload name`,
    )
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ToolgateError('ERR_USAGE', 'TARGET: must be http(s)')
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash) {
    throw new ToolgateError(
      'ERR_USAGE',
      `TARGET: give the URL without a path (${url.origin}); clients keep their own path (/mcp, /sse)`,
    )
  }
  return {url, incomingAuth: undefined}
}

/**
 * Whether a URL target demands a token: an MCP POST without one must get 401. Anything else (an
 * answer, no answer within 3 s) counts as "no incoming auth" — the cautious reading for a warning.
 */
export async function probeIncomingAuth(url: URL): Promise<boolean> {
  try {
    const res = await fetch(new URL('/mcp', url), {
      method: 'POST',
      headers: {'content-type': 'application/json', accept: 'application/json, text/event-stream'},
      body: '{"jsonrpc":"2.0","id":0,"method":"ping"}',
      signal: AbortSignal.timeout(3_000),
    })
    await res.body?.cancel()
    return res.status === 401
  } catch {
    return false
  }
}
