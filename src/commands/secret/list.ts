import {Flags} from '@oclif/core'
import {BaseCommand} from '../base-command.ts'

export default class SecretList extends BaseCommand {
  static override description =
    'List secret names (never values), one per line; --json prints a JSON array.'
  static override examples = [
    '<%= config.bin %> secret list',
    '<%= config.bin %> secret list --json',
  ]
  static override flags = {
    system: Flags.boolean({
      description: "Include toolgate's reserved names (__toolgate/…).",
      default: false,
    }),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(SecretList)
    const {openSecretStore} = await import('../../lib/secrets/index.ts')
    const store = await openSecretStore({logger: this.makeLogger(flags)})
    const names = await store.list({system: flags.system})
    if (flags.json) this.emit(true, '', {event: 'secrets', names})
    else if (names.length > 0) process.stdout.write(names.join('\n') + '\n')
  }
}
