import {resolve} from 'node:path'
import {Args, Flags} from '@oclif/core'
import {BaseCommand} from './base-command.ts'
import {authzFlags, frontFlags, incomingAuthFlags} from './pipeline-flags.ts'
import {networkFlags} from './network-flags.ts'
import {workloadFlags} from './workload-flags.ts'

const {
  'request-timeout': requestTimeout,
  'startup-timeout': startupTimeout,
  'stop-timeout': stopTimeout,
  'proxy-port': proxyPort,
  foreground,
} = workloadFlags

export default class Gateway extends BaseCommand {
  static override description =
    'Run many workloads and remote MCP servers behind one endpoint: one session, one login, one Cedar policy; names are prefixed per backend (detached by default, managed like `run`).'

  static override examples = [
    '<%= config.bin %> gateway tools --backend everything --backend files=fs',
    '<%= config.bin %> gateway tools --backend everything --backend https://mcp.example.com/mcp=remote --config gateway.yaml',
    '<%= config.bin %> gateway tools --config gateway.yaml --oidc-issuer https://auth.example.com --authz-config policy.yaml',
  ]

  static override args = {
    NAME: Args.string({
      description: 'Gateway (workload) name (lower-case letters, digits, -).',
      required: true,
    }),
  }

  static override flags = {
    backend: Flags.string({
      description:
        'A backend: a workload by name (followed across restarts), WORKLOAD=PREFIX, or URL=PREFIX (repeatable). Its names appear as PREFIX__name.',
      multiple: true,
      multipleNonGreedy: true,
      helpGroup: 'GATEWAY',
    }),
    config: Flags.string({
      description:
        'Gateway config (YAML or JSON): per-backend prefix, tool allow/deny/override, and outgoing auth of URL backends (docs/gateway.md).',
      helpGroup: 'GATEWAY',
    }),
    ...frontFlags,
    ...incomingAuthFlags,
    ...authzFlags,
    'request-timeout': requestTimeout,
    'startup-timeout': startupTimeout,
    'stop-timeout': stopTimeout,
    'proxy-port': proxyPort,
    foreground,
    'workload-child': workloadFlags['workload-child'],
    ...networkFlags,
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(Gateway)
    const lib = await import('../lib/workloads/run-command.ts')
    lib.configureNetworkFromFlags(flags)
    // The background process may start elsewhere: the config file is named by its full path.
    const runFlags = {
      ...flags,
      ...(flags.config !== undefined ? {config: resolve(flags.config)} : {}),
      backend: flags.backend ?? [],
      restart: 'no',
      'idle-timeout': '10m',
      'max-processes': 1,
    }
    const input = lib.runInput(args.NAME, [], runFlags)
    const {absentWorkloads, loadGatewayConfig} = await import('../lib/gateway/config.ts')
    for (const name of await absentWorkloads(loadGatewayConfig(runFlags.backend, runFlags.config)))
      process.stderr.write(
        `Warning: workload ${name} is not running; its tools join the gateway when it starts (toolgate run ${name} …)\n`,
      )
    if (!flags.foreground) {
      const state = await lib.runDetached(input, {name: args.NAME, rest: [], flags: runFlags}, {})
      return this.report(flags.json, state)
    }
    const logger = lib.workloadLogger(args.NAME, flags, {child: false})
    const workload = await lib.startForeground(input, logger, {
      json: flags.json,
      isTTY: process.stderr.isTTY === true,
    })
    await lib.serveWorkload(workload, logger, () => this.report(flags.json, workload.state))
  }

  private report(json: boolean, state: {name: string; url: string; port: number}): void {
    const backends = (state as {backends?: string[]}).backends ?? []
    this.emit(
      json,
      `Gateway ${state.name} running on ${state.url} (backends: ${backends.join(', ')})`,
      {
        event: 'running',
        name: state.name,
        url: state.url,
        port: state.port,
        transport: 'gateway',
        backends,
      },
    )
  }
}
