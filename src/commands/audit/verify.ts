import {Args} from '@oclif/core'
import {ToolgateError} from '../../lib/errors.ts'
import {BaseCommand} from '../base-command.ts'

export default class AuditVerify extends BaseCommand {
  static override description =
    "Check an audit log's hash chain: every record intact, none removed or reordered (a file alone is read with its rotations)."

  static override examples = [
    '<%= config.bin %> audit verify /var/log/toolgate/audit.log',
    '<%= config.bin %> audit verify audit.log.2 audit.log.1 audit.log --json',
  ]

  static override strict = false

  static override args = {
    FILE: Args.string({description: 'Audit log file(s), oldest first.', required: true}),
  }

  async run(): Promise<void> {
    const {argv, flags} = await this.parse(AuditVerify)
    const {chainFiles, verifyAuditChain} = await import('../../lib/audit/verify.ts')
    const result = verifyAuditChain(chainFiles(argv as string[]))
    const p = result.problem
    const human = result.ok
      ? `OK: ${result.records} records in ${result.files.length} file(s), chain intact${result.startsAt ? ` (it starts at seq ${result.startsAt}: older records were rotated away)` : ''}`
      : `TAMPERED: ${p!.file}:${p!.line}${p!.seq !== undefined ? ` (seq ${p!.seq})` : ''}: ${p!.what}`
    this.emit(flags.json, human, {event: 'audit-verify', ...result})
    if (!result.ok)
      throw new ToolgateError('ERR_STORAGE', `the audit chain is broken at ${p!.file}:${p!.line}`)
  }
}
