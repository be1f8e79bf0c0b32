import {Args, Flags} from '@oclif/core'
import {ToolgateError} from '../../lib/errors.ts'
import {BaseCommand} from '../base-command.ts'
import {grouped} from '../pipeline-flags.ts'
import {remoteAuthFlags} from '../remote-auth-flags.ts'
import {networkFlags} from '../network-flags.ts'

// `--remote-auth` is what this command does; every other remote-auth flag applies as in `proxy`.
const {'remote-auth': _on, ...loginFlags} = remoteAuthFlags

export default class AuthToken extends BaseCommand {
  static override description =
    'Log in to a remote MCP server (or reuse the saved login) and print a fresh access token, for scripts that call it with curl.'

  static override examples = [
    'TOKEN=$(<%= config.bin %> auth token https://mcp.example.com/mcp --remote-auth-issuer https://idp.example.com)',
    '<%= config.bin %> auth token https://mcp.example.com/mcp --remote-auth-grant client_credentials --remote-auth-client-id ci --remote-auth-client-secret-file ./secret --json',
  ]

  static override args = {
    TARGET_URL: Args.string({description: 'URL of the remote MCP server.', required: true}),
  }

  static override flags = {
    // Accepted (and ignored) so a command line copied from `proxy` works as it is: logging in is
    // what this command does (issue 31).
    'remote-auth': Flags.boolean({
      description: 'Implied: auth token always logs in (accepted for lines copied from proxy).',
      default: false,
      hidden: true,
      helpGroup: 'OUTGOING AUTH',
    }),
    ...grouped(loginFlags, 'OUTGOING AUTH'),
    show: Flags.boolean({
      description: 'Print the token even when stdout is a terminal (where others may see it).',
      default: false,
      helpGroup: 'OUTPUT',
    }),
    ...networkFlags,
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(AuthToken)
    // Before any outbound request: the proxy and CAs every one of them uses (issue 34).
    const {configureFromFlags} = await import('../../lib/network/settings.ts')
    configureFromFlags(flags)
    // A token on a terminal ends up in scrollback and screen shares: scripts capture stdout.
    if (process.stdout.isTTY && !flags.show) {
      throw new ToolgateError(
        'ERR_USAGE',
        'refusing to print an access token to a terminal; capture it (TOKEN=$(toolgate auth token …)) or pass --show',
      )
    }
    const logger = this.makeLogger(flags)
    const {obtainAccessToken} = await import('../../lib/oauth/index.ts')
    const {openSecretStore} = await import('../../lib/secrets/index.ts')
    const result = await obtainAccessToken(flags, args.TARGET_URL, {
      logger,
      openStore: () => openSecretStore({logger}),
      write: (text) => process.stderr.write(text),
      json: flags.json,
      isTTY: process.stderr.isTTY === true,
    })
    this.emit(flags.json, result.token, {
      event: 'token',
      access_token: result.token,
      token_type: 'Bearer',
      ...(result.expiresAt ? {expires_at: result.expiresAt} : {}),
      scopes: result.scopes,
    })
  }
}
