import {ToolgateError} from '../errors.ts'
import type {Logger} from '../log/logger.ts'
import {ngrokProvider} from './ngrok.ts'
import {parseProviderArgs} from './provider-args.ts'
import {sshProvider} from './ssh.ts'
import {probeIncomingAuth, resolveTunnelTarget, type TunnelTarget} from './target.ts'
import type {OpenTunnel, TunnelProvider} from './types.ts'

/**
 * `toolgate proxy tunnel TARGET SERVER_NAME --tunnel-provider <p> --provider-args '<json>'`
 * (contract §4): every check first (provider, its arguments, TARGET), a loud warning — or, with
 * --require-auth, a refusal — when TARGET checks no incoming token, then the tunnel.
 */
export const PROVIDERS: Record<string, TunnelProvider> = {ngrok: ngrokProvider, ssh: sshProvider}

export interface TunnelRequest {
  target: string
  provider: string
  providerArgs: string
  requireAuth: boolean
  logger: Logger
  env?: NodeJS.ProcessEnv
  onUrl: (url: string, target: TunnelTarget, details: Record<string, unknown>) => void
}

export async function openTunnel(req: TunnelRequest): Promise<OpenTunnel> {
  const provider = PROVIDERS[req.provider]
  if (!provider) {
    throw new ToolgateError(
      'ERR_USAGE',
      `--tunnel-provider: "${req.provider.slice(0, 40)}" is not supported (supported: ${Object.keys(PROVIDERS).join(', ')})`,
    )
  }
  const env = req.env ?? process.env
  const args = parseProviderArgs(provider.name, req.providerArgs, provider.args)
  const prepared = await provider.prepare(args, env)
  const target = await resolveTunnelTarget(req.target)
  const authOn = target.incomingAuth ?? (await probeIncomingAuth(target.url))
  if (!authOn) {
    if (req.requireAuth) {
      throw new ToolgateError(
        'ERR_USAGE',
        `TARGET ${target.workload ?? target.url.origin} checks no incoming token; --require-auth refuses to publish it (add --oidc-issuer to the workload or proxy)`,
      )
    }
    req.logger.warn(
      `!!! ${target.workload ? `workload ${target.workload}` : target.url.origin} checks no incoming token: anyone with the tunnel URL can use it (and the credentials it injects). Protect it with --oidc-issuer, or pass --require-auth to make this an error !!!`,
    )
  }
  return provider.open(target, prepared, {
    logger: req.logger,
    env,
    onUrl: (url, details) => req.onUrl(url, target, details),
  })
}
