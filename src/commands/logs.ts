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
      description: 'Keep printing new lines until interrupted or the workload ends.',
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
    const name = validateWorkloadName(args.NAME)
    const stream = flags.proxy ? 'proxy' : 'server'
    // --json: one {"event":"line"} per log line (docs/json.md).
    const write = flags.json
      ? (text: string) => {
          const lines = text.split('\n')
          if (lines.at(-1) === '') lines.pop()
          for (const line of lines)
            process.stdout.write(JSON.stringify({event: 'line', name, stream, text: line}) + '\n')
        }
      : (text: string) => process.stdout.write(text)
    try {
      const ended = await showLogs(name, {
        proxy: flags.proxy,
        follow: flags.follow,
        tail: flags.tail,
        signal: abort.signal,
        write,
      })
      if (ended) {
        const {statusText} = await import('../lib/workloads/manage.ts')
        this.emit(flags.json, `[toolgate] workload ${name} ${statusText(ended)}; no more lines`, {
          event: 'end',
          name,
          status: ended.status,
        })
      }
    } finally {
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
    }
  }
}
