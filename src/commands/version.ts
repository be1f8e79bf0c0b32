import {BaseCommand} from './base-command.ts'
import {versionInfo, versionLine} from '../lib/version.ts'

export default class Version extends BaseCommand {
  static override description =
    'Print the version, commit, build date, platform and Node runtime (also: --version, -v).'

  static override examples = ['<%= config.bin %> version', '<%= config.bin %> version --json']

  async run(): Promise<void> {
    const {flags} = await this.parse(Version)
    const info = versionInfo()
    this.emit(flags.json, versionLine(info), {event: 'version', ...info})
  }
}
