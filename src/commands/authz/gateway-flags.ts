import {Flags} from '@oclif/core'
import type {ResourceAttributes} from '../../lib/authz/entity-model.ts'

/**
 * A gateway's backends for `authz check` and `authz lint` (issue 37): the same `--backend` and
 * config file as `toolgate gateway`, so Cedar sees `resource.backend` exactly as the gateway sets it.
 */
export const gatewayFlags = {
  'gateway-config': Flags.string({
    description:
      'A gateway config (as given to toolgate gateway --config): resources get its backend attribute.',
    helpGroup: 'GATEWAY',
  }),
  backend: Flags.string({
    description: 'A gateway backend, as given to toolgate gateway --backend (repeatable).',
    multiple: true,
    multipleNonGreedy: true,
    helpGroup: 'GATEWAY',
  }),
}

/** The gateway's backends, when the flags name one; undefined otherwise. */
export async function gatewayBackendsOf(flags: {
  'gateway-config'?: string | undefined
  backend?: string[] | undefined
}): Promise<Array<{name: string; prefix: string}> | undefined> {
  if (flags['gateway-config'] === undefined && flags.backend === undefined) return undefined
  const {loadGatewayConfig} = await import('../../lib/gateway/config.ts')
  return loadGatewayConfig(flags.backend ?? [], flags['gateway-config']).backends
}

/** `resource.backend` as the gateway's front adds it, when the flags name a gateway. */
export async function gatewayAttributesOf(
  flags: Parameters<typeof gatewayBackendsOf>[0],
): Promise<{resourceAttributes?: ResourceAttributes}> {
  const backends = await gatewayBackendsOf(flags)
  if (!backends) return {}
  const {backendAttribute} = await import('../../lib/gateway/names.ts')
  return {resourceAttributes: backendAttribute(backends)}
}
