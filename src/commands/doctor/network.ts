import {Args} from '@oclif/core'
import {ToolgateError} from '../../lib/errors.ts'
import {BaseCommand} from '../base-command.ts'
import {networkFlags} from '../network-flags.ts'

export default class DoctorNetwork extends BaseCommand {
  static override description =
    'Show the outbound proxy and trusted CAs in force; with a URL, which way a request to it goes, and try it.'

  static override examples = [
    '<%= config.bin %> doctor network',
    '<%= config.bin %> doctor network https://idp.example.com/.well-known/openid-configuration',
    'HTTPS_PROXY=http://proxy.corp:3128 <%= config.bin %> doctor network https://mcp.example.com/mcp --ca-cert corp-ca.pem',
  ]

  static override args = {
    URL: Args.string({description: 'An http(s) URL to try.'}),
  }

  static override flags = {...networkFlags}

  async run(): Promise<void> {
    const {args, flags} = await this.parse(DoctorNetwork)
    const {configureFromFlags} = await import('../../lib/network/settings.ts')
    configureFromFlags(flags)
    if (args.URL !== undefined && !/^https?:\/\/[^\s]+$/i.test(args.URL))
      throw new ToolgateError('ERR_USAGE', `"${args.URL.slice(0, 120)}" is not an http(s) URL`)
    const {diagnoseNetwork, reportLines} = await import('../../lib/network/doctor.ts')
    const report = await diagnoseNetwork(args.URL)
    this.emit(flags.json, reportLines(report).join('\n'), report as unknown as {event: string})
    // Not reached: the exit code of what failed (69 for a network failure, docs/exit-codes.md).
    if (report.reached === false) this.exit(69)
  }
}
