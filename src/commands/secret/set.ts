import {ToolgateError} from '../../lib/errors.ts'
import {BaseCommand} from '../base-command.ts'
import {reservedNameFlag, secretNameArg} from './shared.ts'
import {stripOneNewline} from '../../lib/secrets/input.ts'

export default class SecretSet extends BaseCommand {
  static override description =
    'Store a secret. The value is read from stdin (one trailing newline is stripped) or a hidden prompt on a terminal; never from the command line.'
  static override examples = [
    'printf \'%s\' "$TOKEN" | <%= config.bin %> secret set github-token',
    '<%= config.bin %> secret set github-token   # prompts without echo',
  ]
  static override args = secretNameArg
  static override flags = reservedNameFlag

  async run(): Promise<void> {
    const {args, flags} = await this.parse(SecretSet)
    const {openSecretStore, promptHidden, readPipedValue} =
      await import('../../lib/secrets/index.ts')
    const store = await openSecretStore({logger: this.makeLogger(flags)})
    // Refuse a bad name or a read-only provider before asking for a value nobody can store.
    store.assertWritable(args.name, {system: flags.system})
    if (process.stdin.isTTY && !this.canPrompt(flags)) {
      throw new ToolgateError(
        'ERR_INPUT_REQUIRED',
        `no value to store and this run is non-interactive: pipe it on stdin (printf '%s' "$VALUE" | toolgate secret set ${args.name})`,
      )
    }
    const value = process.stdin.isTTY
      ? stripOneNewline(
          await promptHidden(`Value for ${args.name}: `, process.stdin, process.stderr),
        )
      : await readPipedValue(process.stdin)
    await store.set(args.name, value, {system: flags.system})
    this.emit(flags.json, `Secret ${args.name} saved (${store.provider})`, {
      event: 'saved',
      name: args.name,
      provider: store.provider,
      saved: true,
    })
  }
}
