import {Flags} from '@oclif/core'
import {BaseCommand} from '../base-command.ts'
import {PROVIDER_NAMES, type ProviderName} from '../../lib/secrets/types.ts'

export default class SecretSetup extends BaseCommand {
  static override description =
    'Choose the secrets provider. For "encrypted", take the master password (TOOLGATE_SECRETS_PASSWORD or a hidden prompt), create or unlock the store, and keep the password in the OS keyring.'
  static override examples = [
    '<%= config.bin %> secret setup',
    'TOOLGATE_SECRETS_PASSWORD=… <%= config.bin %> secret setup --provider encrypted',
    '<%= config.bin %> secret setup --provider environment',
  ]
  static override flags = {
    provider: Flags.string({
      description: 'Where secrets live.',
      options: [...PROVIDER_NAMES],
      default: 'encrypted',
    }),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(SecretSetup)
    const {promptNewPassword, setupSecrets} = await import('../../lib/secrets/index.ts')
    const logger = this.makeLogger(flags)
    const tty = this.canPrompt(flags)
    const result = await setupSecrets({
      provider: flags.provider as ProviderName,
      logger,
      promptPassword: tty ? () => promptNewPassword(process.stdin, process.stderr) : undefined,
    })
    const human =
      result.provider === 'environment'
        ? `Secrets provider: environment (read-only, TOOLGATE_SECRET_<NAME> variables); saved in ${result.configFile}`
        : `Secrets provider: encrypted; store ${result.store} at ${result.file}; master password ${
            result.keyring ? 'saved in the OS keyring' : 'NOT saved (set TOOLGATE_SECRETS_PASSWORD)'
          }`
    this.emit(flags.json, human, {event: 'setup', ...result})
  }
}
