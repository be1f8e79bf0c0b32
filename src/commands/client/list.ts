import {BaseCommand} from '../base-command.ts'

export default class ClientList extends BaseCommand {
  static override description =
    'The supported MCP clients found on this machine, their config files, and the workloads each reaches.'

  static override examples = [
    '<%= config.bin %> client list',
    '<%= config.bin %> client list --json',
  ]

  async run(): Promise<void> {
    const {flags} = await this.parse(ClientList)
    const {listClients} = await import('../../lib/clients/client-list.ts')
    const {currentContext} = await import('../../lib/clients/context.ts')
    const clients = await listClients(currentContext(), process.env)
    if (flags.json) return this.emit(true, '', {event: 'clients', clients})
    for (const c of clients) {
      const state = c.detected ? `found (${c.detectedBy})` : 'not found'
      process.stdout.write(`${c.name} [${c.client}]: ${state}\n`)
      for (const f of c.files) {
        const note = f.error ? `  ! ${f.error}` : f.exists ? '' : '  (no file yet)'
        process.stdout.write(`  ${f.scope.padEnd(7)} ${f.path}${note}\n`)
      }
      for (const e of c.entries) {
        const reach = e.workload ? `workload ${e.workload}` : 'no running workload'
        const by = e.toolgate ? 'written by toolgate' : 'written by hand'
        process.stdout.write(`    ${e.entry} → ${reach} (${e.via}, ${e.scope}, ${by})\n`)
      }
    }
  }
}
