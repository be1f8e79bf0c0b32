import {Args} from '@oclif/core'
import {BaseCommand} from '../base-command.ts'
import {stdio} from './list.ts'
import {registryFlags} from './registry-flags.ts'

export default class RegistryStatus extends BaseCommand {
  static override description =
    'Set the status of one published version: active, deprecated or deleted (a deleted version is no longer the latest).'

  static override examples = [
    '<%= config.bin %> registry status io.github.acme/weather@1.2.0 deprecated --registry https://registry.example.com/registry/team',
  ]

  static override args = {
    SERVER: Args.string({description: 'namespace/name@version', required: true}),
    STATUS: Args.string({
      description: 'The new status.',
      required: true,
      options: ['active', 'deprecated', 'deleted'],
    }),
  }

  static override flags = {...registryFlags}

  async run(): Promise<void> {
    const {args, flags} = await this.parse(RegistryStatus)
    const {configureFromFlags} = await import('../../lib/network/settings.ts')
    configureFromFlags(flags)
    const r = await import('../../lib/registry-client/commands.ts')
    await r.withRegistry(flags, true, this.makeLogger(flags), (client) =>
      r.setStatus(client, args.SERVER, args.STATUS, flags.json, stdio),
    )
  }
}
