import {Args, Flags} from '@oclif/core'
import {ToolgateError} from '../lib/errors.ts'
import {DEFAULT_MAX_BODY} from '../lib/proxy/body-limit.ts'
import {BaseCommand} from './base-command.ts'
import {remoteAuthFlags} from './remote-auth-flags.ts'

export default class Proxy extends BaseCommand {
  static override description =
    'Run a transparent, streaming, authenticating HTTP proxy in front of an MCP server (streamable HTTP or SSE).'

  static override examples = [
    '<%= config.bin %> proxy --target-uri http://127.0.0.1:3001 weather',
    '<%= config.bin %> proxy --target-uri https://mcp.example.com --oidc-issuer https://auth.example.com --oidc-audience api://weather --resource-url http://127.0.0.1:8080/mcp --port 8080 weather',
    '<%= config.bin %> proxy --target-uri https://mcp.example.com --remote-auth-bearer-token-file ./token --remote-forward-headers X-Tenant=acme weather',
  ]

  static override args = {
    SERVER_NAME: Args.string({
      description: 'Name of the proxied server (used in logs and state).',
      required: true,
    }),
  }

  static override flags = {
    'target-uri': Flags.string({description: 'URI of the target MCP server.', required: true}),
    host: Flags.string({description: 'Listen host (IP or hostname).', default: '127.0.0.1'}),
    port: Flags.integer({description: 'Listen port (default: a free port).', min: 0, max: 65535}),
    'allowed-origins': Flags.string({
      description: 'Exact-match allowlist for the Origin header (repeatable).',
      multiple: true,
      multipleNonGreedy: true,
    }),
    'max-request-body-size': Flags.integer({
      description: `Maximum inbound request body size in bytes (0 = ${DEFAULT_MAX_BODY} bytes, 8 MiB).`,
      default: 0,
      min: 0,
    }),
    'resource-url': Flags.string({
      description: 'Resource URL advertised at /.well-known/oauth-protected-resource (RFC 9728).',
    }),
    'oidc-issuer': Flags.string({description: 'Issuer URL for incoming-token validation.'}),
    'oidc-audience': Flags.string({description: 'Expected audience of incoming tokens.'}),
    'oidc-client-id': Flags.string({description: 'OIDC client ID (for introspection).'}),
    'oidc-client-secret': Flags.string({description: 'OIDC client secret (for introspection).'}),
    'oidc-introspection-url': Flags.string({
      description: 'Token introspection endpoint (RFC 7662).',
    }),
    'oidc-jwks-url': Flags.string({description: 'JWKS URL (skips OIDC discovery).'}),
    'oidc-scopes': Flags.string({
      description: 'Scopes advertised in the well-known endpoint.',
      multiple: true,
      multipleNonGreedy: true,
      default: ['openid'],
    }),
    ...remoteAuthFlags,
    'remote-auth-bearer-token': Flags.string({
      description: 'Bearer token for the remote server (or env TOOLGATE_REMOTE_AUTH_BEARER_TOKEN).',
    }),
    'remote-auth-bearer-token-file': Flags.string({
      description: 'File holding the bearer token for the remote server.',
    }),
    'remote-forward-headers': Flags.string({
      description: 'Header injected into forwarded requests, Name=Value (repeatable).',
      multiple: true,
      multipleNonGreedy: true,
    }),
    'remote-forward-headers-secret': Flags.string({
      description:
        'Header injected into forwarded requests whose value comes from the secrets store, Name=secret-name (repeatable; overrides --remote-forward-headers of the same name).',
      multiple: true,
      // One value per occurrence, so a following SERVER_NAME is not swallowed as a second value.
      multipleNonGreedy: true,
    }),
    'authz-config': Flags.string({
      description:
        'Cedar authorization policy file (JSON or YAML), applied after incoming authentication.',
    }),
    'token-exchange-url': Flags.string({
      description: 'Token exchange endpoint (RFC 8693); enables token exchange.',
    }),
    'token-exchange-audience': Flags.string({description: 'Target audience of exchanged tokens.'}),
    'token-exchange-client-id': Flags.string({description: 'Client ID for token exchange.'}),
    'token-exchange-client-secret': Flags.string({
      description: 'Client secret for token exchange.',
    }),
    'token-exchange-client-secret-file': Flags.string({
      description: 'File holding the token-exchange client secret.',
    }),
    'token-exchange-header-name': Flags.string({
      description: 'Header that carries the exchanged token (default: replaces Authorization).',
    }),
    'token-exchange-scopes': Flags.string({
      description: 'Scopes requested for exchanged tokens.',
      multiple: true,
      multipleNonGreedy: true,
    }),
    'token-exchange-subject-token-type': Flags.string({
      // No oclif default: the option is only valid with --token-exchange-url, so an implicit value
      // must not trip that check. The default is applied in src/lib/proxy/options.ts.
      description: 'Type of the subject token: access_token or id_token [default: access_token].',
      options: ['access_token', 'id_token'],
    }),
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(Proxy)
    const logger = this.makeLogger(flags)
    // Loaded here, not at the top: every command's start would otherwise pay for the proxy, Cedar,
    // OAuth and keyring modules. Literal specifiers keep the bundle (esbuild) complete.
    const {proxyConfigFromFlags} = await import('../lib/proxy/options.ts')
    const {incomingAuthEnabled} = await import('../lib/proxy/incoming-auth.ts')
    const {startProxy} = await import('../lib/proxy/proxy-server.ts')
    const {openSecretStore, overrideForwardHeaders, resolveForwardHeaderSecrets} =
      await import('../lib/secrets/index.ts')
    const {remoteAuthFromFlags} = await import('../lib/oauth/index.ts')
    const config = proxyConfigFromFlags(args.SERVER_NAME, flags, {logger})
    const headerSecrets = flags['remote-forward-headers-secret'] ?? []
    if (headerSecrets.length > 0) {
      // Resolved once at startup: a missing secret stops the proxy before it listens.
      const fromSecrets = await resolveForwardHeaderSecrets(
        headerSecrets,
        await openSecretStore({logger}),
      )
      config.forwardHeaders = overrideForwardHeaders(config.forwardHeaders, fromSecrets)
    }
    // Loaded before listening: a bad policy file refuses to start, naming the policy index.
    if (flags['authz-config']) {
      // Policies decide on the token's subject and claims: without incoming authentication every
      // request would be anonymous and denied, a proxy that only ever answers 403.
      if (!incomingAuthEnabled(config.oidc)) {
        throw new ToolgateError(
          'ERR_USAGE',
          '--authz-config: authorization needs an authenticated principal; add incoming token validation with --oidc-issuer (or --oidc-jwks-url, or --oidc-introspection-url with --oidc-client-id/--oidc-client-secret)',
        )
      }
      const {loadAuthzInterceptor} = await import('../lib/authz/index.ts')
      config.interceptor = await loadAuthzInterceptor(flags['authz-config'], {logger})
    }
    // Remote OAuth (src/lib/oauth): flags and the secrets store are checked now, the login runs
    // once the port is bound, so a busy --port is reported before anyone is sent to a browser.
    // Until the login is done, clients get 503 with Retry-After (the token source has no token).
    const remoteAuth = await remoteAuthFromFlags(flags, flags['target-uri'], {
      logger,
      openStore: () => openSecretStore({logger}),
      write: (text) => process.stderr.write(text),
      json: flags.json,
      isTTY: process.stderr.isTTY === true,
    })
    if (remoteAuth) config.upstreamToken = remoteAuth.source
    const proxy = await startProxy(config, {logger}).catch(async (err: unknown) => {
      await remoteAuth?.source.close()
      throw err
    })
    const target = flags['target-uri']
    this.emit(flags.json, `Proxy ${config.name} listening on ${proxy.url} -> ${target}`, {
      name: config.name,
      url: proxy.url,
      port: proxy.port,
      target,
    })
    let stopping = false
    const stopped = new Promise<void>((resolve) => {
      const stop = (signal: string) => {
        stopping = true
        logger.info('shutting down', {signal})
        proxy.close().then(resolve, resolve)
      }
      process.once('SIGINT', () => stop('SIGINT'))
      process.once('SIGTERM', () => stop('SIGTERM'))
    })
    if (remoteAuth) {
      try {
        await remoteAuth.login()
      } catch (err) {
        // Interrupted by a signal: that is a normal shutdown, not a failed login.
        if (!stopping) {
          await proxy.close()
          throw err
        }
      }
    }
    await stopped
  }
}
