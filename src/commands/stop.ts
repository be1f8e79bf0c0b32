import {Args, Flags} from '@oclif/core'
import {BaseCommand} from './base-command.ts'

export default class Stop extends BaseCommand {
  static override description =
    'Stop workloads: SIGTERM to the server, SIGKILL after --timeout, then the proxy.'

  static override examples = ['<%= config.bin %> stop weather', '<%= config.bin %> stop --all']

  static override strict = false

  static override args = {
    NAME: Args.string({description: 'Workload name(s).', required: false}),
  }

  static override flags = {
    all: Flags.boolean({description: 'Stop every running workload.', default: false}),
    timeout: Flags.string({
      description: 'How long the server may take to exit before SIGKILL.',
      default: '10s',
    }),
  }

  async run(): Promise<void> {
    const {argv, flags} = await this.parse(Stop)
    const {ToolgateError} = await import('../lib/errors.ts')
    const {parseDuration} = await import('../lib/config/duration.ts')
    const {stopWorkload, workloadRows, statusText} = await import('../lib/workloads/manage.ts')
    const {validateWorkloadName} = await import('../lib/workloads/state.ts')
    const timeoutMs = parseDuration(flags.timeout, '--timeout')
    let names = (argv as string[]).map(validateWorkloadName)
    if (flags.all === names.length > 0) {
      throw new ToolgateError('ERR_USAGE', 'name the workloads to stop, or give --all (not both)')
    }
    if (flags.all) names = (await workloadRows(false)).map((r) => r.name)
    // All at once: each waits up to the timeout for its own server.
    const states = await Promise.all(names.map((name) => stopWorkload(name, timeoutMs)))
    for (const state of states) {
      const human = state.wasRunning
        ? `${state.name}: ${statusText(state)}`
        : `${state.name}: not running (already ${statusText(state)}); nothing to stop`
      this.emit(flags.json, human, {
        event: 'stopped',
        name: state.name,
        status: state.status,
        wasRunning: state.wasRunning,
      })
    }
  }
}
