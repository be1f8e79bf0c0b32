import {Args} from '@oclif/core'
import {BaseCommand} from '../base-command.ts'
import {stdio} from './list.ts'
import {listFlags, registryFlags} from './registry-flags.ts'

export default class RegistrySearch extends BaseCommand {
  static override description =
    'Search an MCP registry: servers whose name, title or description contains TEXT (case-insensitive), the latest version of each.'

  static override examples = [
    '<%= config.bin %> registry search weather',
    '<%= config.bin %> registry search github --registry https://registry.example.com/registry/team --all',
  ]

  static override args = {
    TEXT: Args.string({description: 'Text to look for.', required: true}),
  }

  static override flags = {...listFlags, ...registryFlags}

  async run(): Promise<void> {
    const {args, flags} = await this.parse(RegistrySearch)
    const {configureFromFlags} = await import('../../lib/network/settings.ts')
    configureFromFlags(flags)
    const r = await import('../../lib/registry-client/commands.ts')
    await r.withRegistry(flags, false, this.makeLogger(flags), (client) =>
      r.listEntries(
        client,
        {filters: r.filtersOf(flags, args.TEXT), max: flags.all ? undefined : flags.limit},
        flags.json,
        stdio,
      ),
    )
  }
}
