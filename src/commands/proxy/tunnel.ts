import {Args, Flags} from '@oclif/core'
import {BaseCommand} from '../base-command.ts'

export default class ProxyTunnel extends BaseCommand {
  static override description =
    'Publish a workload or a local MCP endpoint through ngrok or an SSH reverse tunnel.'

  static override examples = [
    `<%= config.bin %> proxy tunnel weather weather-public --tunnel-provider ssh --provider-args '{"host":"bastion.example.com","user":"me","remote-port":8443}'`,
    `<%= config.bin %> proxy tunnel http://127.0.0.1:8080 demo --tunnel-provider ngrok --provider-args '{"auth-token":"…","url":"https://demo.ngrok.app"}'`,
  ]

  static override args = {
    TARGET: Args.string({
      description: 'A workload name (toolgate run) or a URL without a path.',
      required: true,
    }),
    SERVER_NAME: Args.string({
      description: 'Name of the tunnel (logs and output).',
      required: true,
    }),
  }

  static override flags = {
    'tunnel-provider': Flags.string({description: 'ngrok or ssh.', required: true}),
    'provider-args': Flags.string({
      description: "The provider's arguments as a JSON object.",
      default: '{}',
    }),
    'require-auth': Flags.boolean({
      description: 'Refuse to publish a TARGET that checks no incoming token (instead of warning).',
      default: false,
    }),
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(ProxyTunnel)
    const logger = this.makeLogger(flags)
    const {openTunnel} = await import('../../lib/tunnel/open-tunnel.ts')
    // Handlers go in before the tunnel's line is printed: a script that reads it and signals at
    // once must get a graceful close, not Node's default exit by signal. A signal while the tunnel
    // is still opening is re-raised, so it stops the command as it always did.
    let announced = false
    const interrupted = new Promise<void>((resolve) => {
      for (const signal of ['SIGINT', 'SIGTERM'] as const)
        process.once(signal, () => (announced ? resolve() : process.kill(process.pid, signal)))
    })
    const tunnel = await openTunnel({
      target: args.TARGET,
      provider: flags['tunnel-provider'],
      providerArgs: flags['provider-args'],
      requireAuth: flags['require-auth'],
      logger,
      onUrl: (url, target, details) => {
        announced = true
        this.emit(flags.json, `Tunnel ${args.SERVER_NAME} open at ${url} -> ${target.url.origin}`, {
          event: 'tunnel',
          name: args.SERVER_NAME,
          url,
          target: target.url.origin,
          provider: flags['tunnel-provider'],
          ...details,
        })
      },
    })
    // Up until interrupted (a dry run holds nothing else that keeps the process alive).
    const keepAlive = setInterval(() => undefined, 60_000)
    await interrupted
    clearInterval(keepAlive)
    logger.info('closing the tunnel')
    await tunnel.close()
  }
}
