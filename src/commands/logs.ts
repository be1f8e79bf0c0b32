import {Args, Flags} from '@oclif/core'
import {BaseCommand} from './base-command.ts'

export default class Logs extends BaseCommand {
  static override description =
    "Show a workload's log: the server's stderr, or the proxy's log with --proxy."

  static override examples = [
    '<%= config.bin %> logs weather',
    '<%= config.bin %> logs weather --proxy --follow',
  ]

  static override args = {
    NAME: Args.string({description: 'Workload name.', required: true}),
  }

  static override flags = {
    proxy: Flags.boolean({description: "The proxy's log instead of the server's.", default: false}),
    follow: Flags.boolean({
      char: 'f',
      description: 'Keep printing new lines until interrupted.',
      default: false,
    }),
    tail: Flags.integer({
      char: 'n',
      description: 'Lines to show from the end.',
      default: 100,
      min: 0,
    }),
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(Logs)
    const {showLogs} = await import('../lib/workloads/logs.ts')
    const {validateWorkloadName} = await import('../lib/workloads/state.ts')
    const abort = new AbortController()
    const stop = () => abort.abort()
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
    try {
      await showLogs(validateWorkloadName(args.NAME), {
        proxy: flags.proxy,
        follow: flags.follow,
        tail: flags.tail,
        signal: abort.signal,
        write: (text) => process.stdout.write(text),
      })
    } finally {
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
    }
  }
}
