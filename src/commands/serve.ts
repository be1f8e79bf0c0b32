import {Flags} from '@oclif/core'
import {BaseCommand} from './base-command.ts'

export default class Serve extends BaseCommand {
  static override description = 'Serve an MCP registry over HTTP, protected by OAuth bearer tokens.'
  static override flags = {
    config: Flags.string({description: 'Path to the configuration file (YAML or JSON).'}),
  }
  async run(): Promise<void> {
    const {flags} = await this.parse(Serve)
    this.log(`placeholder ${flags.config ?? ''}`)
  }
}
