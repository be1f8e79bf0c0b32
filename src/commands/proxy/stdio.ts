import {Args, Flags} from '@oclif/core'
import {BaseCommand} from '../base-command.ts'
import {outgoingAuthFlags} from '../pipeline-flags.ts'
import {networkFlags} from '../network-flags.ts'

export default class ProxyStdio extends BaseCommand {
  static override description =
    'Connect a stdio-only MCP client to a running workload or a remote MCP server (streamable HTTP or SSE), with outgoing auth.'

  static override examples = [
    '<%= config.bin %> proxy stdio weather',
    '<%= config.bin %> proxy stdio https://mcp.example.com/mcp --remote-auth',
    '<%= config.bin %> proxy stdio https://mcp.example.com/mcp --header "X-Tenant=acme" --remote-auth-bearer-token-file ./token',
  ]

  static override args = {
    TARGET: Args.string({
      description: 'A workload name (toolgate run) or an http(s) URL.',
      required: true,
    }),
  }

  static override flags = {
    transport: Flags.string({
      description:
        'How to reach the server; auto tries streamable HTTP, then legacy SSE on 404/405.',
      options: ['auto', 'streamable-http', 'sse'],
      default: 'auto',
      helpGroup: 'TARGET',
    }),
    'reconnect-timeout': Flags.string({
      description:
        'A workload target: how long to wait for it to come back (stop/run, restart) before a request fails.',
      default: '30s',
      helpGroup: 'TARGET',
    }),
    header: Flags.string({
      description: 'Name=Value header sent to the server (repeatable).',
      multiple: true,
      multipleNonGreedy: true,
      helpGroup: 'OUTGOING AUTH',
    }),
    ...outgoingAuthFlags,
    ...networkFlags,
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(ProxyStdio)
    // Before any outbound request: the proxy and CAs every one of them uses (issue 34).
    const {configureFromFlags} = await import('../../lib/network/settings.ts')
    configureFromFlags(flags)
    // stdout is the protocol channel: logs (and --json events) go to stderr only.
    const logger = this.makeLogger(flags)
    const {runStdioRelay} = await import('../../lib/stdio-relay/run-relay.ts')
    const {parseDuration} = await import('../../lib/config/duration.ts')
    const reconnectTimeoutMs = parseDuration(flags['reconnect-timeout'], '--reconnect-timeout')
    const abort = new AbortController()
    const stop = () => abort.abort()
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
    const forward = [...(flags['remote-forward-headers'] ?? []), ...(flags.header ?? [])]
    await runStdioRelay({
      target: args.TARGET,
      transport: flags.transport as 'auto' | 'streamable-http' | 'sse',
      flags: {
        ...flags,
        'remote-forward-headers': forward,
        host: '127.0.0.1',
        'max-request-body-size': 0,
      },
      logger,
      json: flags.json,
      isTTY: process.stderr.isTTY === true,
      input: process.stdin,
      writeLine: (line) => process.stdout.write(line + '\n'),
      writeErr: (text) => process.stderr.write(text),
      signal: abort.signal,
      reconnectTimeoutMs,
    })
  }
}
