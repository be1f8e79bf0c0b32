import {Args, Flags} from '@oclif/core'
import {BaseCommand} from './base-command.ts'

export default class Rm extends BaseCommand {
  static override description =
    'Remove stopped workloads (state and logs); --force stops running ones first.'

  static override examples = [
    '<%= config.bin %> rm weather',
    '<%= config.bin %> rm --force weather other',
  ]

  static override strict = false

  static override args = {
    NAME: Args.string({description: 'Workload name(s).', required: true}),
  }

  static override flags = {
    force: Flags.boolean({
      char: 'f',
      description: 'Stop a running workload first.',
      default: false,
    }),
    unregister: Flags.boolean({
      description:
        "Also remove the client entries 'toolgate client add' wrote for it (asked on a terminal otherwise).",
      default: false,
    }),
  }

  async run(): Promise<void> {
    const {argv, flags} = await this.parse(Rm)
    const {removeWorkloadFully} = await import('../lib/workloads/manage.ts')
    const {validateWorkloadName} = await import('../lib/workloads/state.ts')
    const {afterRemove} = await import('../lib/clients/unregister.ts')
    const names = (argv as string[]).map(validateWorkloadName)
    for (const name of names) {
      await removeWorkloadFully(name, {force: flags.force, timeoutMs: 10_000})
      this.emit(flags.json, `${name}: removed`, {event: 'removed', name})
      await afterRemove(name, {
        unregister: flags.unregister,
        canPrompt: this.canPrompt(flags),
        out: {
          json: flags.json,
          stdout: (line) => process.stdout.write(line + '\n'),
          stderr: (line) => process.stderr.write(line + '\n'),
        },
      })
    }
  }
}
