import {Args} from '@oclif/core'
import {BaseCommand} from './base-command.ts'
import {authzFlags, frontFlags, incomingAuthFlags, outgoingAuthFlags} from './pipeline-flags.ts'
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

  static override args = {
    NAME: Args.string({
      description: 'Workload name (lower-case letters, digits, -).',
      required: true,
    }),
  }

  static override flags = {
    ...workloadFlags,
    ...frontFlags,
    ...incomingAuthFlags,
    ...authzFlags,
    ...outgoingAuthFlags,
  }

  async run(): Promise<void> {
    let argv = this.argv
    const child = argv.includes('--workload-child')
    if (child) {
      // The background half of a detached run: its arguments come on stdin, never in `ps`.
      const {readStdinArgv} = await import('../lib/workloads/child-argv.ts')
      argv = await readStdinArgv()
    }
    const {args, argv: rest, flags} = await this.parse(Run, argv)
    const lib = await import('../lib/workloads/run-command.ts')
    const input = lib.runInput(args.NAME, (rest as string[]).slice(1), flags)
    if (!flags.foreground && !child) {
      const state = await lib.runDetached(input, argv, {
        relay: flags['remote-auth'] ? (line) => process.stderr.write(line + '\n') : undefined,
      })
      return this.report(flags.json, state)
    }
    const logger = lib.workloadLogger(args.NAME, flags, {child})
    const workload = await lib.startForeground(input, logger, {
      json: flags.json,
      isTTY: !child && process.stderr.isTTY === true,
      echo: child ? undefined : (chunk) => process.stderr.write(chunk),
    })
    if (!child) this.report(flags.json, workload.state)
    await lib.serveWorkload(workload, logger)
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
    },
  ): void {
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
