import {Flags} from '@oclif/core'
import {BaseCommand} from '../base-command.ts'
import {incomingAuthFlags} from '../pipeline-flags.ts'
import {gatewayAttributesOf, gatewayFlags} from './gateway-flags.ts'

const {'oidc-scopes': _scopes, ...oidcFlags} = incomingAuthFlags

export default class AuthzCheck extends BaseCommand {
  static override description =
    'Decide one MCP request with a Cedar policy file exactly as the proxy would, and say which policies decided it (exit 0 allow, 1 deny).'

  static override examples = [
    `<%= config.bin %> authz check --authz-config policy.yaml --claims claims.json --method tools/call --params '{"name":"deploy","arguments":{"env":"prod"}}' --annotations '{"destructiveHint":true}'`,
    '<%= config.bin %> authz check --authz-config policy.yaml --claims claims.json --method tools/list --target-uri http://127.0.0.1:3000/mcp',
  ]

  static override flags = {
    'authz-config': Flags.string({
      description: 'Cedar policy file (JSON or YAML), as given to proxy/run.',
      required: true,
      helpGroup: 'REQUEST',
    }),
    method: Flags.string({
      description: 'JSON-RPC method, e.g. tools/call.',
      required: true,
      helpGroup: 'REQUEST',
    }),
    params: Flags.string({
      description: 'JSON-RPC params as JSON.',
      default: '{}',
      helpGroup: 'REQUEST',
    }),
    annotations: Flags.string({
      description: 'Tool annotations the server lists for the tool, as JSON.',
      exclusive: ['target-uri'],
      helpGroup: 'REQUEST',
    }),
    'target-uri': Flags.string({
      description:
        'MCP server (streamable HTTP) to ask for tool annotations and lists, as the proxy does.',
      helpGroup: 'REQUEST',
    }),
    'list-response': Flags.string({
      description: 'File with a tools/prompts/resources list response to filter.',
      exclusive: ['target-uri'],
      helpGroup: 'REQUEST',
    }),
    'show-request': Flags.boolean({
      description: 'Print the Cedar request: entities and context.',
      default: false,
      helpGroup: 'OUTPUT',
    }),
    claims: Flags.string({
      description: "JSON file with the caller's token claims (sub names the Client).",
      exactlyOne: ['claims', 'token'],
      helpGroup: 'CALLER',
    }),
    token: Flags.string({
      description: 'A token, validated with --config or the --oidc-* flags first.',
      helpGroup: 'CALLER',
    }),
    config: Flags.string({
      description: 'serve config whose providers validate --token.',
      helpGroup: 'CALLER',
    }),
    ...oidcFlags,
    ...gatewayFlags,
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(AuthzCheck)
    const {loadAuthzConfigFile} = await import('../../lib/authz/policy-file.ts')
    const {checkRequest, parseAnnotations} = await import('../../lib/authz/check.ts')
    const inputs = await import('../../lib/authz/check-inputs.ts')
    const {renderCheck} = await import('../../lib/authz/check-render.ts')
    const config = await loadAuthzConfigFile(flags['authz-config'])
    const params = inputs.parseJsonFlag(flags.params, '--params')
    const caller = await inputs.resolveCaller(
      {
        claims: flags.claims,
        token: flags.token,
        config: flags.config,
        oidc: inputs.oidcOptionsOf(flags),
      },
      this.makeLogger(flags),
    )
    const target = flags['target-uri'] ? await inputs.connectTarget(flags['target-uri']) : undefined
    try {
      const listFile = flags['list-response']
      const result = await checkRequest({
        config,
        ...(await gatewayAttributesOf(flags)),
        ...caller,
        method: flags.method,
        params,
        annotations: flags.annotations ? parseAnnotations(flags.annotations) : undefined,
        fetchAnnotations: target ? (tool) => target.annotations(tool) : undefined,
        listResult: listFile
          ? () => inputs.readListResponse(listFile)
          : target
            ? (kind) => target.list(kind)
            : undefined,
      })
      this.emit(flags.json, renderCheck(result, flags['show-request']), {
        event: 'decision',
        ...result,
      })
      if (result.decision === 'deny') this.exit(1)
    } finally {
      await target?.close()
    }
  }
}
