import {Args} from '@oclif/core'
import {BaseCommand} from '../base-command.ts'
import {clientChoiceFlags} from './client-flags.ts'

export default class ClientRemove extends BaseCommand {
  static override description =
    'Remove the client entries toolgate wrote for a workload (or under an entry name); entries you wrote yourself are never touched.'

  static override examples = [
    '<%= config.bin %> client remove everything',
    '<%= config.bin %> client remove everything --client codex',
  ]

  static override args = {
    NAME: Args.string({
      description: 'A workload name, or an entry name given to client add --name.',
      required: true,
    }),
  }

  static override flags = {client: clientChoiceFlags.client}

  async run(): Promise<void> {
    const {args, flags} = await this.parse(ClientRemove)
    const {runClientRemove} = await import('../../lib/clients/client-command.ts')
    const count = await runClientRemove(args.NAME, flags, {
      json: flags.json,
      stdout: (line) => process.stdout.write(line + '\n'),
      stderr: (line) => process.stderr.write(line + '\n'),
    })
    if (count === 0 && !flags.json)
      process.stdout.write(`No client entries written by toolgate for "${args.NAME}".\n`)
  }
}
