import {Flags} from '@oclif/core'
import {grouped, outgoingAuthFlags} from '../pipeline-flags.ts'
import {networkFlags} from '../network-flags.ts'
import {remoteAuthFlags} from '../remote-auth-flags.ts'

/**
 * Flags every `toolgate registry` command shares: which registry, its credentials (the outgoing-
 * auth flags of `proxy`: bearer token, or `--remote-auth` with browser, device and
 * client_credentials logins) and the network.
 */
export const registryFlags = {
  registry: Flags.string({
    description:
      'Base URL of the registry API (toolgate serve: https://host/registry/NAME), or env TOOLGATE_REGISTRY [default for reading: the official MCP registry].',
    env: 'TOOLGATE_REGISTRY',
    helpGroup: 'REGISTRY',
  }),
  ...grouped(remoteAuthFlags, 'OUTGOING AUTH'),
  'remote-auth-bearer-token': outgoingAuthFlags['remote-auth-bearer-token'],
  'remote-auth-bearer-token-file': outgoingAuthFlags['remote-auth-bearer-token-file'],
  ...networkFlags,
}

/** What to list: filters (sent to the registry, applied there) and how much. */
export const listFlags = {
  limit: Flags.integer({
    description: 'Show at most this many entries (more are fetched page by page as needed).',
    default: 30,
    min: 1,
    helpGroup: 'LIST',
  }),
  all: Flags.boolean({
    description: 'Show every entry: walk all pages to the end.',
    default: false,
    exclusive: ['limit'],
    helpGroup: 'LIST',
  }),
  'all-versions': Flags.boolean({
    description: 'Every version of each server, not only the latest.',
    default: false,
    helpGroup: 'LIST',
  }),
  'updated-since': Flags.string({
    description: 'Only versions updated after this RFC 3339 time.',
    helpGroup: 'LIST',
  }),
  transport: Flags.string({
    description: 'Only servers offering this transport.',
    options: ['stdio', 'streamable-http', 'sse'],
    helpGroup: 'LIST',
  }),
  type: Flags.string({
    description: 'Only servers with packages (package) or with remotes (remote).',
    options: ['package', 'remote'],
    helpGroup: 'LIST',
  }),
  'registry-type': Flags.string({
    description:
      'Only servers with a package from this registry type (npm, pypi, oci, nuget, mcpb…).',
    helpGroup: 'LIST',
  }),
}
