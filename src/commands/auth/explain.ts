import {Flags} from '@oclif/core'
import {BaseCommand} from '../base-command.ts'
import {incomingAuthFlags} from '../pipeline-flags.ts'
import {networkFlags} from '../network-flags.ts'

// The validation flags of proxy/run, minus the scopes it only advertises.
const {'oidc-scopes': _scopes, ...oidcFlags} = incomingAuthFlags

export default class AuthExplain extends BaseCommand {
  static override description =
    'Explain why a bearer token is accepted or refused, check by check, with the validator serve and proxy use (exit 0 accepted, 1 refused).'

  static override examples = [
    '<%= config.bin %> auth explain --config serve.yaml --token-file token.txt',
    'echo "$TOKEN" | <%= config.bin %> auth explain --oidc-issuer https://idp.example.com --oidc-audience api://tools',
    '<%= config.bin %> auth explain --config serve.yaml --token "$TOKEN" --offline --json',
  ]

  static override flags = {
    config: Flags.string({
      description: 'The serve config file whose auth.oauth.providers judge the token.',
      exclusive: ['oidc-issuer', 'oidc-jwks-url', 'oidc-introspection-url'],
      helpGroup: 'PROVIDERS',
    }),
    ...oidcFlags,
    token: Flags.string({
      description: 'The token (prefer --token-file or stdin: argv is visible to other users).',
      helpGroup: 'TOKEN',
    }),
    'token-file': Flags.string({
      description: 'File holding the token.',
      helpGroup: 'TOKEN',
    }),
    offline: Flags.boolean({
      description:
        'Make no network call (no discovery, JWKS or introspection); says what was skipped.',
      default: false,
      helpGroup: 'TOKEN',
    }),
    ...networkFlags,
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(AuthExplain)
    // Before any outbound request: the proxy and CAs every one of them uses (issue 34).
    const {configureFromFlags} = await import('../../lib/network/settings.ts')
    configureFromFlags(flags)
    const lib = await import('../../lib/auth/explain/index.ts')
    const source = flags.config
      ? lib.providersFromServeConfig(flags.config)
      : lib.providersFromOidcFlags({
          issuer: flags['oidc-issuer'],
          audience: flags['oidc-audience'],
          clientId: flags['oidc-client-id'],
          clientSecret: flags['oidc-client-secret'],
          introspectionUrl: flags['oidc-introspection-url'],
          jwksUrl: flags['oidc-jwks-url'],
          scopes: [],
        })
    const token = await lib.readToken({
      token: flags.token,
      tokenFile: flags['token-file'],
      stdin: () => lib.readBounded(process.stdin),
      stdinIsTty: process.stdin.isTTY === true,
    })
    const explanation = await lib.explainToken(token, {
      ...source,
      offline: flags.offline,
      logger: this.makeLogger(flags),
    })
    this.emit(flags.json, lib.renderExplanation(explanation), {
      event: 'explanation',
      ...(lib.explanationJson(explanation) as Record<string, unknown>),
    })
    if (explanation.verdict === 'refused') this.exit(1)
  }
}
