import {Flags} from '@oclif/core'
import type {AuthMode} from '../lib/config/serve-config.ts'
import {parseListenAddress} from '../lib/http/listen.ts'
import {BaseCommand} from './base-command.ts'
import {networkFlags} from './network-flags.ts'

export default class Serve extends BaseCommand {
  static override description =
    'Serve MCP registries (MCP registry API v0.1) over HTTP, protected by OAuth bearer tokens by default.'

  static override examples = [
    '<%= config.bin %> serve --config serve.yaml',
    '<%= config.bin %> serve --config examples/anonymous.yaml --address 127.0.0.1:8080',
    '<%= config.bin %> serve --auth-mode anonymous --address :0 --internal-address :0 --json',
  ]

  static override flags = {
    config: Flags.string({
      description:
        'Configuration file (YAML or JSON). Default: $XDG_CONFIG_HOME/toolgate/serve.yaml when it exists.',
      helpGroup: 'SERVE',
    }),
    address: Flags.string({
      description: 'Main API listen address (host:port, :port, [ipv6]:port).',
      default: ':8080',
      helpGroup: 'SERVE',
    }),
    'internal-address': Flags.string({
      description: 'Listen address of /health, /readiness, /version and /metrics.',
      default: ':8081',
      helpGroup: 'SERVE',
    }),
    'auth-mode': Flags.string({
      description: 'Overrides auth.mode of the configuration file.',
      options: ['oauth', 'anonymous'],
      helpGroup: 'SERVE',
    }),
    'audit-log': Flags.string({
      description:
        'Audit trail of registry reads, publishes and refused tokens: hash-chained JSON lines in FILE, - for stdout, a syslog URL, or otlp (OTEL_EXPORTER_OTLP_ENDPOINT) (docs/audit.md).',
      helpGroup: 'SERVE',
    }),
    ...networkFlags,
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(Serve)
    // Loaded here, not at the top: `--help`, `--version` and other commands never pay for the
    // server, the store and their dependencies. Literal specifiers keep this bundle-safe.
    const {loadCommandConfig} = await import('../lib/config/serve-config.ts')
    const {startServe} = await import('../lib/server/serve.ts')
    const logger = this.makeLogger(flags)
    const address = parseListenAddress(flags.address, '--address')
    const internalAddress = parseListenAddress(flags['internal-address'], '--internal-address')
    const config = loadCommandConfig(flags.config, flags['auth-mode'] as AuthMode | undefined)

    // Before the first outbound request (sources, providers): the proxy and CAs (issue 34).
    const {configureFromFlags} = await import('../lib/network/settings.ts')
    configureFromFlags(flags, config.network)

    // Handlers go in before anything listens: a signal that arrives while starting (or right after
    // the listening line) must still lead to a graceful stop, never to the default kill.
    const signalled = new Promise<NodeJS.Signals>((resolve) => {
      process.once('SIGTERM', () => resolve('SIGTERM'))
      process.once('SIGINT', () => resolve('SIGINT'))
    })
    let started = false
    void signalled.then((signal) => {
      if (started) return
      // Still loading sources (possibly waiting on a slow upstream): nothing is served yet, and
      // SQLite's transactions keep the store consistent, so leaving at once is safe.
      logger.info('stopped while starting', {signal})
      process.exit(0)
    })
    const handle = await startServe(config, {
      address,
      internalAddress,
      logger,
      ...(flags['audit-log'] ? {auditLog: flags['audit-log']} : {}),
    })
    started = true
    // The headline names where it is bound, not only the loopback URL (issue 31): `:8080` is
    // every interface, which a user must know.
    const scope = (all: boolean, address: string) =>
      all ? `bound to ${address}, every interface` : `bound to ${address}`
    this.emit(
      flags.json,
      `toolgate serve listening on ${handle.url} (${scope(handle.allInterfaces, handle.address)}); internal ${handle.internalUrl} (${scope(handle.internalAllInterfaces, handle.internalAddress)})`,
      {
        event: 'listening',
        url: handle.url,
        internalUrl: handle.internalUrl,
        address: handle.address,
        internalAddress: handle.internalAddress,
        allInterfaces: handle.allInterfaces,
        authMode: handle.authMode,
      },
    )
    const signal = await signalled
    logger.info('shutting down', {signal})
    await handle.close()
    logger.info('stopped')
    // Anything still holding the event loop (a stuck keep-alive socket) must not keep us alive.
    setTimeout(() => process.exit(0), 2000).unref()
  }
}
