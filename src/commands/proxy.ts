import {Args, Flags} from '@oclif/core'
import {BaseCommand} from './base-command.ts'
import {authzFlags, frontFlags, incomingAuthFlags, outgoingAuthFlags} from './pipeline-flags.ts'
import {networkFlags} from './network-flags.ts'

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
    port: Flags.integer({
      description: 'Listen port (default: a free port).',
      min: 0,
      max: 65535,
      helpGroup: 'LISTEN',
    }),
    ...frontFlags,
    ...incomingAuthFlags,
    ...authzFlags,
    ...outgoingAuthFlags,
    ...networkFlags,
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(Proxy)
    // Before any outbound request: the proxy and CAs every one of them uses (issue 34).
    const {configureFromFlags} = await import('../lib/network/settings.ts')
    configureFromFlags(flags)
    const logger = this.makeLogger(flags)
    // Loaded here, not at the top: every command's start would otherwise pay for the proxy, Cedar,
    // OAuth and keyring modules. Literal specifiers keep the bundle (esbuild) complete.
    const {startPipeline, serveUntilSignal} = await import('../lib/proxy/pipeline.ts')
    const pipeline = await startPipeline(args.SERVER_NAME, flags, {
      logger,
      write: (text) => process.stderr.write(text),
      json: flags.json,
      isTTY: process.stderr.isTTY === true,
    })
    const {clientUrl} = await import('../lib/proxy/endpoint-target.ts')
    const target = flags['target-uri']
    const {proxy, config} = pipeline
    const client = clientUrl(proxy.url, config.targetUri)
    await serveUntilSignal(pipeline, logger, () =>
      this.emit(
        flags.json,
        `Proxy ${config.name} listening on ${proxy.url} -> ${target} (clients: ${client})`,
        {
          event: 'listening',
          name: config.name,
          url: proxy.url,
          clientUrl: client,
          port: proxy.port,
          target,
        },
      ),
    )
  }
}
