import {Args, Flags} from '@oclif/core'
import {BaseCommand} from '../base-command.ts'
import {gatewayBackendsOf, gatewayFlags} from './gateway-flags.ts'

export default class AuthzLint extends BaseCommand {
  static override description =
    'Check a Cedar policy file against the entity model: policies that never apply, attribute reads that can error, permits a forbid shadows, misspelt claims (exit 0 clean, 1 findings).'

  static override examples = [
    '<%= config.bin %> authz lint policy.yaml',
    '<%= config.bin %> authz lint policy.yaml --claims sample-claims.json --json',
    '<%= config.bin %> authz lint policy.yaml --gateway-config gateway.yaml',
  ]

  static override args = {
    FILE: Args.string({
      description:
        'Policy file (JSON or YAML), as given to --authz-config or auth.authz.policyFile.',
      required: true,
    }),
  }

  static override flags = {
    claims: Flags.string({
      description: 'JSON file with real token claims, to catch misspelt claim_* names.',
    }),
    model: Flags.string({
      description:
        'Entity model: proxy (tools, prompts, resources) or registry (servers); auto picks by the policies.',
      options: ['auto', 'proxy', 'registry'],
      default: 'auto',
    }),
    ...gatewayFlags,
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(AuthzLint)
    const {lintFile} = await import('../../lib/authz/lint.ts')
    const {loadClaims} = await import('../../lib/authz/check-inputs.ts')
    const sample = flags.claims
      ? (await loadClaims(flags.claims, {requireSub: false})).claims
      : undefined
    const result = await lintFile(args.FILE, {
      model: flags.model as 'auto' | 'proxy' | 'registry',
      sampleClaims: sample,
      gatewayBackends: (await gatewayBackendsOf(flags))?.map((b) => b.name),
    })
    const lines = result.findings.map(
      (f) => `${f.severity}: ${f.policy ?? '(file)'}: [${f.kind}] ${f.message}`,
    )
    const summary =
      result.findings.length === 0
        ? `${args.FILE}: ${result.policies} policies, no findings (${result.model} model)`
        : `${args.FILE}: ${result.findings.length} finding(s)${result.model ? ` (${result.model} model)` : ''}`
    this.emit(flags.json, [...lines, summary].join('\n'), {event: 'lint', ...result})
    if (result.findings.length > 0) this.exit(1)
  }
}
