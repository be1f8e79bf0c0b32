import {Flags} from '@oclif/core'
import {BaseCommand} from './base-command.ts'

export default class List extends BaseCommand {
  static override description =
    'List workloads started with `toolgate run` (running ones; --all for every one).'

  static override examples = ['<%= config.bin %> list', '<%= config.bin %> list --all --json']

  static override flags = {
    all: Flags.boolean({
      char: 'a',
      description: 'Include stopped, exited and lost workloads.',
      default: false,
    }),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(List)
    const {isolationText, workloadRows} = await import('../lib/workloads/manage.ts')
    const rows = await workloadRows(flags.all)
    if (flags.json) {
      this.emit(true, '', {event: 'workloads', workloads: rows})
      return
    }
    const table = [
      ['NAME', 'STATUS', 'URL', 'PORT', 'ISOLATION', 'SANDBOX', 'CREATED'],
      ...rows.map((r) => [
        r.name,
        r.status,
        r.url || '-',
        r.port ? String(r.port) : '-',
        isolationText(r),
        r.sandbox ?? '-',
        r.created,
      ]),
    ]
    const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)))
    for (const row of table) {
      process.stdout.write(
        row
          .map((cell, i) => cell.padEnd(widths[i]!))
          .join('  ')
          .trimEnd() + '\n',
      )
    }
  }
}
