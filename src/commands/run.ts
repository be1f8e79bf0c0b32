import {Args} from '@oclif/core'
import {BaseCommand} from './base-command.ts'
import {authzFlags, frontFlags, incomingAuthFlags, outgoingAuthFlags} from './pipeline-flags.ts'
import {networkFlags} from './network-flags.ts'
import {workloadFlags} from './workload-flags.ts'

export default class Run extends BaseCommand {
  static override description =
    'Run an MCP server as a managed workload behind the authenticating proxy (detached by default).'

  static override examples = [
    '<%= config.bin %> run everything -- npx -y @modelcontextprotocol/server-everything',
    '<%= config.bin %> run weather --secret weather-key,target=API_KEY -- node server.js',
    '<%= config.bin %> run web --transport streamable-http --target-port 3001 -- node http-server.js',
    '<%= config.bin %> run remote --url https://mcp.example.com/mcp --remote-auth',
  ]

  static override strict = false

  static override usage = [
    'run NAME [FLAGS] -- <command> [args…]',
    'run NAME --url <https://…> [FLAGS]',
    'run NAME --from-registry <registry URL> <server>[@version] [FLAGS]',
  ]

  static override args = {
    NAME: Args.string({
      description: 'Workload name (lower-case letters, digits, -).',
      required: true,
    }),
  }

  // Help shows the groups in this order: listening, incoming auth, authorization, outgoing auth,
  // then the workload's own flags.
  static override flags = {
    ...frontFlags,
    ...incomingAuthFlags,
    ...authzFlags,
    ...outgoingAuthFlags,
    ...workloadFlags,
    ...networkFlags,
  }

  async run(): Promise<void> {
    // The background half of a detached run never comes here: src/cli.ts hands
    // `run --workload-child` to lib/workloads/child-main.ts before oclif loads.
    const lib = await import('../lib/workloads/run-command.ts')
    // Everything after the first `--` is the server's command line, byte for byte and in order:
    // oclif never sees it (its parser regrouped repeated flags, issue 31).
    const split = lib.splitServerCommand(this.argv)
    const {
      args,
      argv: rest,
      flags,
    } = await this.parse(Run, split.own).catch((err: unknown) => {
      throw lib.explainRunParseError(err, split)
    })
    lib.configureNetworkFromFlags(flags)
    const extra = lib.serverArgs(split, (rest as string[]).slice(1), flags)
    const input = lib.runInput(args.NAME, extra, flags)
    if (!flags.foreground) {
      const state = await lib.runDetached(
        input,
        {name: args.NAME, rest: extra, flags},
        {relay: flags['remote-auth'] ? (line) => process.stderr.write(line + '\n') : undefined},
      )
      return this.report(flags.json, state)
    }
    const logger = lib.workloadLogger(args.NAME, flags, {child: false})
    const workload = await lib.startForeground(input, logger, {
      json: flags.json,
      isTTY: process.stderr.isTTY === true,
      echo: (chunk) => process.stderr.write(chunk),
    })
    await lib.serveWorkload(workload, logger, () => this.report(flags.json, workload.state))
  }

  private report(
    json: boolean,
    state: {
      name: string
      url: string
      baseUrl: string
      port: number
      transport: string
      supervisorPid?: number
      portMoved?: unknown
    },
  ): void {
    const moved = state.portMoved as {from: number; to: number; clientEntries: number} | undefined
    if (moved)
      process.stderr.write(
        `Warning: port ${moved.from} of the last run is taken; ${state.name} now listens on port ${moved.to} (${moved.clientEntries} client entries updated; others must be changed by hand)\n`,
      )
    const sse = state.transport === 'stdio' ? ` (legacy SSE: ${state.baseUrl}/sse)` : ''
    this.emit(json, `Workload ${state.name} running on ${state.url}${sse}`, {
      event: 'running',
      name: state.name,
      url: state.url,
      ...(sse ? {sseUrl: `${state.baseUrl}/sse`} : {}),
      port: state.port,
      transport: state.transport,
      pid: state.supervisorPid,
    })
  }
}
