import {Args} from '@oclif/core'
import {BaseCommand} from '../base-command.ts'
import {clientAddFlags} from './client-flags.ts'

export default class ClientSetup extends BaseCommand {
  static override description =
    'Pick a running workload and the MCP clients to connect it to (asks on a terminal; elsewhere, give NAME and --client or --all-detected).'

  static override examples = [
    '<%= config.bin %> client setup',
    '<%= config.bin %> client setup everything --all-detected --non-interactive',
  ]

  static override args = {
    NAME: Args.string({description: 'The workload (asked for on a terminal when left out).'}),
  }

  static override flags = clientAddFlags

  async run(): Promise<void> {
    const {args, flags} = await this.parse(ClientSetup)
    const {runClientSetup} = await import('../../lib/clients/setup.ts')
    await runClientSetup(
      args.NAME,
      flags,
      {
        json: flags.json,
        stdout: (line) => process.stdout.write(line + '\n'),
        stderr: (line) => process.stderr.write(line + '\n'),
      },
      this.canPrompt(flags),
    )
  }
}
