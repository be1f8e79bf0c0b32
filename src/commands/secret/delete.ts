import {BaseCommand} from '../base-command.ts'
import {reservedNameFlag, secretNameArg} from './shared.ts'
import {ToolgateError} from '../../lib/errors.ts'

export default class SecretDelete extends BaseCommand {
  static override description = 'Delete a secret; a name that is not stored is an error (exit 1).'
  static override examples = ['<%= config.bin %> secret delete github-token']
  static override args = secretNameArg
  static override flags = reservedNameFlag

  async run(): Promise<void> {
    const {args, flags} = await this.parse(SecretDelete)
    const {openSecretStore} = await import('../../lib/secrets/index.ts')
    const store = await openSecretStore({logger: this.makeLogger(flags)})
    const deleted = await store.delete(args.name, {system: flags.system})
    if (!deleted) {
      throw new ToolgateError(
        'ERR_SECRET_NOT_FOUND',
        `secret "${args.name}" not found in the ${store.provider} secrets store`,
      )
    }
    this.emit(flags.json, `Secret ${args.name} deleted`, {
      event: 'deleted',
      name: args.name,
      deleted: true,
    })
  }
}
