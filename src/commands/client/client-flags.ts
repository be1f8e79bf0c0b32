import {Flags} from '@oclif/core'
import {CLIENT_IDS} from '../../lib/clients/catalog.ts'

/** Flags shared by `client add`, `client setup` and `client remove`. */
export const clientChoiceFlags = {
  client: Flags.string({
    description: `A client to change (repeatable, or comma-separated): ${CLIENT_IDS.join(', ')}.`,
    multiple: true,
  }),
  'all-detected': Flags.boolean({
    description: 'Every supported client found on this machine (see toolgate client list).',
    default: false,
  }),
}

export const clientAddFlags = {
  ...clientChoiceFlags,
  scope: Flags.string({
    description:
      "user: the client's own config in your home; project: the config in this folder (.mcp.json, .vscode/mcp.json…).",
    options: ['user', 'project'],
    default: 'user',
  }),
  via: Flags.string({
    description:
      'http: the workload URL; stdio: the client starts toolgate proxy stdio NAME. Default: http where the client can, else stdio.',
    options: ['http', 'stdio'],
  }),
  name: Flags.string({
    description: 'The entry name in the client configs (default: the workload name).',
  }),
  force: Flags.boolean({
    description: 'Replace an entry of the same name that toolgate did not write.',
    default: false,
  }),
}
