import {BaseCommand} from '../base-command.ts'
import {listFlags, registryFlags} from './registry-flags.ts'

export default class RegistryList extends BaseCommand {
  static override description =
    'List the servers of an MCP registry (API v0.1: toolgate serve or the official one), the latest version of each by default, through every page with --all.'

  static override examples = [
    '<%= config.bin %> registry list --registry https://registry.example.com/registry/team',
    '<%= config.bin %> registry list --all --transport stdio --json',
    'TOOLGATE_REGISTRY=https://registry.example.com/registry/team <%= config.bin %> registry list --remote-auth --remote-auth-issuer https://idp.example.com',
  ]

  static override flags = {...listFlags, ...registryFlags}

  async run(): Promise<void> {
    const {flags} = await this.parse(RegistryList)
    const {configureFromFlags} = await import('../../lib/network/settings.ts')
    configureFromFlags(flags)
    const r = await import('../../lib/registry-client/commands.ts')
    await r.withRegistry(flags, false, this.makeLogger(flags), (client) =>
      r.listEntries(
        client,
        {filters: r.filtersOf(flags), max: flags.all ? undefined : flags.limit},
        flags.json,
        stdio,
      ),
    )
  }
}

export const stdio = {
  line: (text: string) => void process.stdout.write(text + '\n'),
  note: (text: string) => void process.stderr.write(text + '\n'),
}
