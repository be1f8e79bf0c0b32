import {Args} from '@oclif/core'
import {BaseCommand} from '../base-command.ts'
import {clientAddFlags} from './client-flags.ts'

export default class ClientAdd extends BaseCommand {
  static override description =
    "Register a workload (or an MCP server URL) in MCP clients' own config files: Claude Code, Claude Desktop, Cursor, VS Code, Windsurf, Gemini CLI, Codex."

  static override examples = [
    '<%= config.bin %> client add everything --all-detected',
    '<%= config.bin %> client add everything --client claude-code --client vscode --scope project',
    '<%= config.bin %> client add weather --client claude-desktop --via stdio',
  ]

  static override args = {
    TARGET: Args.string({
      description: 'A workload name, or an http(s) MCP server URL.',
      required: true,
    }),
  }

  static override flags = clientAddFlags

  async run(): Promise<void> {
    const {args, flags} = await this.parse(ClientAdd)
    const {runClientAdd} = await import('../../lib/clients/client-command.ts')
    await runClientAdd(args.TARGET, flags, this.output(flags.json))
  }

  private output(json: boolean) {
    return {
      json,
      stdout: (line: string) => process.stdout.write(line + '\n'),
      stderr: (line: string) => process.stderr.write(line + '\n'),
    }
  }
}
