import {readFile} from 'node:fs/promises'
import {parse as parseYaml} from 'yaml'
import {ToolgateError} from '../errors.ts'
import {isRecord} from '../mcp/json-rpc.ts'
import type {TunnelProvider} from './types.ts'

/**
 * ngrok through its official agent library (@ngrok/ngrok; no binary download). `dry-run` validates
 * everything (token present, URL, traffic policy file) and contacts nothing.
 */
interface NgrokPlan {
  token: string
  domain?: string
  pooling: boolean
  policy?: string
  dryRun: boolean
}

export const ngrokProvider: TunnelProvider = {
  name: 'ngrok',
  args: {
    'auth-token': {type: 'string'},
    url: {type: 'string'},
    pooling: {type: 'boolean'},
    'traffic-policy-file': {type: 'string'},
    'dry-run': {type: 'boolean'},
  },
  async prepare(args, env): Promise<NgrokPlan> {
    const token = (args['auth-token'] as string | undefined) ?? env.NGROK_AUTHTOKEN
    if (!token) {
      throw new ToolgateError(
        'ERR_USAGE',
        '--provider-args: "auth-token" is required for provider ngrok (or set NGROK_AUTHTOKEN)',
      )
    }
    let domain: string | undefined
    if (args.url !== undefined) {
      try {
        const u = new URL(
          String(args.url).includes('://') ? String(args.url) : `https://${args.url}`,
        )
        if (u.pathname !== '/' || u.search) throw new Error('path')
        domain = u.hostname
      } catch {
        throw new ToolgateError(
          'ERR_USAGE',
          `--provider-args: "url" must be an ngrok URL such as https://example.ngrok.app (no path)`,
        )
      }
    }
    let policy: string | undefined
    const file = args['traffic-policy-file'] as string | undefined
    if (file !== undefined) {
      if (!/\.ya?ml$/i.test(file)) {
        throw new ToolgateError(
          'ERR_USAGE',
          '--provider-args: "traffic-policy-file" must be a .yml or .yaml file',
        )
      }
      let parsed: unknown
      try {
        parsed = parseYaml(await readFile(file, 'utf8'))
      } catch (err) {
        throw new ToolgateError(
          'ERR_USAGE',
          `--provider-args: "traffic-policy-file" ${file}: ${(err as Error).message.split('\n')[0]}`,
        )
      }
      if (!isRecord(parsed)) {
        throw new ToolgateError(
          'ERR_USAGE',
          `--provider-args: "traffic-policy-file" ${file}: must hold a traffic policy mapping (on_http_request, …)`,
        )
      }
      policy = JSON.stringify(parsed)
    }
    return {
      token,
      pooling: args.pooling === true,
      dryRun: args['dry-run'] === true,
      ...(domain ? {domain} : {}),
      ...(policy ? {policy} : {}),
    }
  },
  async open(target, prepared, hooks) {
    const plan = prepared as NgrokPlan
    if (plan.dryRun) {
      hooks.onUrl(plan.domain ? `https://${plan.domain}` : '(a URL ngrok assigns)', {dryRun: true})
      return {close: async () => undefined}
    }
    const ngrok = await import('@ngrok/ngrok')
    const session = await new ngrok.SessionBuilder().authtoken(plan.token).connect()
    let builder = session.httpEndpoint()
    if (plan.domain) builder = builder.domain(plan.domain)
    if (plan.pooling) builder = builder.poolingEnabled(true)
    if (plan.policy) builder = builder.trafficPolicy(plan.policy)
    const listener = await builder.listenAndForward(target.url.href)
    hooks.onUrl(listener.url() ?? '', {})
    return {
      async close() {
        await listener.close().catch(() => undefined)
        await session.close().catch(() => undefined)
      },
    }
  },
}
