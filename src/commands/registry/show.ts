import {Args} from '@oclif/core'
import {BaseCommand} from '../base-command.ts'
import {stdio} from './list.ts'
import {registryFlags} from './registry-flags.ts'

export default class RegistryShow extends BaseCommand {
  static override description =
    'Show one server of an MCP registry: its packages, remotes, status and versions (the latest unless @VERSION).'

  static override examples = [
    '<%= config.bin %> registry show io.github.acme/weather',
    '<%= config.bin %> registry show io.github.acme/weather@1.2.0 --json',
  ]

  static override args = {
    SERVER: Args.string({description: 'namespace/name[@version]', required: true}),
  }

  static override flags = {...registryFlags}

  async run(): Promise<void> {
    const {args, flags} = await this.parse(RegistryShow)
    const {configureFromFlags} = await import('../../lib/network/settings.ts')
    configureFromFlags(flags)
    const r = await import('../../lib/registry-client/commands.ts')
    await r.withRegistry(flags, false, this.makeLogger(flags), (client) =>
      r.showEntry(client, args.SERVER, flags.json, stdio),
    )
  }
}
