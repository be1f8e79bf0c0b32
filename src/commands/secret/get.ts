import {BaseCommand} from '../base-command.ts'
import {reservedNameFlag, secretNameArg} from './shared.ts'

export default class SecretGet extends BaseCommand {
  static override description =
    'Print the value of a secret on stdout (with --json: {"name","value"}).'
  static override examples = [
    '<%= config.bin %> secret get github-token',
    '<%= config.bin %> secret get github-token --json',
  ]
  static override args = secretNameArg
  static override flags = reservedNameFlag

  async run(): Promise<void> {
    const {args, flags} = await this.parse(SecretGet)
    const {openSecretStore} = await import('../../lib/secrets/index.ts')
    const store = await openSecretStore({logger: this.makeLogger(flags)})
    const value = await store.require(args.name, {system: flags.system})
    this.emit(flags.json, value, {event: 'secret', name: args.name, value})
  }
}
