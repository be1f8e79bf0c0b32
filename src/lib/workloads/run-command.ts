import {ToolgateError} from '../errors.ts'
import {createLogger, type Logger} from '../log/logger.ts'
import type {PipelineFlags} from '../proxy/pipeline.ts'
import {RotatingLog} from '../supervisor/rotating-log.ts'
import {parseDuration} from '../config/duration.ts'
import {xdgDirs} from '../config/xdg.ts'
import type {ChildRequest} from './child-argv.ts'
import {proxyLogFile, serverLogFile, startDetached} from './detach.ts'
import {assertCommandExists, replacedBySandbox} from './find-command.ts'
import {loadPermissionProfile} from '../sandbox/profile.ts'
import {assertCanListen} from '../http/listen.ts'
import {configureFromFlags, type NetworkFlagValues} from '../network/settings.ts'
import {assertNameFree, startWorkload, type RunningWorkload} from './run-workload.ts'
import {
  buildWorkloadSpec,
  checkRunInput,
  gatewaySpec,
  sandboxWanted,
  type RunInput,
} from './spec.ts'
import type {WorkloadState} from './state.ts'

/** The secrets store, loaded only when a workload names a secret (issue 11: background memory). */
async function openSecretStore(opts?: {logger: Logger}) {
  return (await import('../secrets/index.ts')).openSecretStore(opts)
}

export {serveWorkload} from './foreground.ts'

/**
 * The steps of `toolgate run` (src/commands/run.ts stays a thin parser): flags → RunInput, the
 * detached start, the foreground start with its logs.
 */

export type RunFlags = Omit<PipelineFlags, 'target-uri'> & {
  transport?: string | undefined
  'target-port'?: number | undefined
  url?: string | undefined
  'from-registry'?: string | undefined
  'from-registry-token-file'?: string | undefined
  'proxy-port'?: number | undefined
  env?: string[] | undefined
  'env-file'?: string | undefined
  secret?: string[] | undefined
  'request-timeout': string
  'stop-timeout': string
  'startup-timeout': string
  restart: string
  isolation?: string | undefined
  sandbox?: boolean | undefined
  'permission-profile'?: string | undefined
  'idle-timeout': string
  'max-processes': number
  /** `toolgate gateway` (issue 37). */
  backend?: string[] | undefined
  config?: string | undefined
} & NetworkFlagValues

export function runInput(name: string, rest: string[], flags: RunFlags): RunInput {
  const base = flags['from-registry']
  if (base !== undefined && rest.length !== 1) {
    throw new ToolgateError(
      'ERR_USAGE',
      '--from-registry <registry URL> takes the server as the next argument: toolgate run NAME --from-registry URL <server>[@version]',
    )
  }
  if (base === undefined && flags['from-registry-token-file'] !== undefined)
    throw new ToolgateError('ERR_USAGE', '--from-registry-token-file needs --from-registry')
  return {
    name,
    command: base === undefined ? rest : [],
    ...(base !== undefined
      ? {
          registry: {
            base,
            ref: rest[0]!,
            ...(flags['from-registry-token-file']
              ? {tokenFile: flags['from-registry-token-file']}
              : {}),
          },
        }
      : {}),
    transport: flags.transport,
    targetPort: flags['target-port'],
    url: flags.url,
    proxyPort: flags['proxy-port'],
    env: flags.env ?? [],
    envFile: flags['env-file'],
    secrets: flags.secret ?? [],
    requestTimeout: flags['request-timeout'],
    stopTimeout: flags['stop-timeout'],
    startupTimeout: flags['startup-timeout'],
    restart: flags.restart,
    isolation: flags.isolation,
    sandbox: flags.sandbox,
    permissionProfile: flags['permission-profile'],
    idleTimeout: flags['idle-timeout'],
    maxProcesses: flags['max-processes'],
    ...(flags.backend !== undefined || flags.config !== undefined
      ? {gateway: {backends: flags.backend ?? [], config: flags.config}}
      : {}),
    flags,
  }
}

/**
 * `run`'s own arguments, and the server's command line: everything after the first `--`,
 * untouched (repeated flags, a second `--`, empty strings, spaces). Without `--`, `server` is
 * undefined and positionals after NAME are the command (or the registry server reference).
 */
export function splitServerCommand(argv: string[]): {own: string[]; server?: string[]} {
  const i = argv.indexOf('--')
  return i === -1 ? {own: argv} : {own: argv.slice(0, i), server: argv.slice(i + 1)}
}

/**
 * What follows NAME: the server command after `--`, or (without `--`) the positionals — the
 * command, or the registry server reference with --from-registry. Words on both sides of `--` are
 * a mistake, never silently dropped.
 */
export function serverArgs(
  split: {own: string[]; server?: string[]},
  positionals: string[],
  flags: {'from-registry'?: string | undefined},
): string[] {
  if (split.server === undefined || split.server.length === 0) return positionals
  if (flags['from-registry'] !== undefined)
    throw new ToolgateError(
      'ERR_USAGE',
      `--from-registry: the registry entry decides the server command; nothing goes after -- (got "${split.server.join(' ').slice(0, 80)}")`,
    )
  if (positionals.length > 0)
    throw new ToolgateError(
      'ERR_USAGE',
      `"${positionals.join(' ').slice(0, 80)}" before --: the server command goes after -- alone (toolgate run NAME [flags] -- <command> [args…])`,
    )
  return split.server
}

/**
 * oclif's parse errors for `run`, in the user's terms: a flag oclif does not know, after a word
 * that is not a flag and with no `--`, is the server's own flag (`run x npx -y pkg`).
 */
export function explainRunParseError(
  err: unknown,
  split: {own: string[]; server?: string[]},
): unknown {
  const flags = (err as {flags?: unknown}).flags
  if (split.server !== undefined || !Array.isArray(flags) || flags.length === 0) return err
  const words = split.own.filter((a) => !a.startsWith('-'))
  if (words.length < 2) return err
  const [name, ...command] = words
  const first = split.own.findIndex((a) => a === command[0])
  const shown = split.own.slice(first).join(' ')
  return new ToolgateError(
    'ERR_USAGE',
    `${flags.join(', ')} is not a flag of toolgate run; it looks like the server's own. Put the server command after --: toolgate run ${name} -- ${shown}`,
  )
}

/** Starts the workload in the background and returns its state once it is ready. */
export async function runDetached(
  input: RunInput,
  request: ChildRequest,
  options: {relay?: ((line: string) => void) | undefined},
): Promise<WorkloadState> {
  checkRunInput(input)
  // A gateway's backends and config file: found wrong here, not in the background process's log.
  if (input.gateway) await gatewaySpec(input)
  await assertNameFree(input.name)
  // Found by `run` itself, before a background process starts (issue 31).
  if (input.proxyPort)
    await assertCanListen(
      {host: input.flags.host ?? '127.0.0.1', port: input.proxyPort},
      '--proxy-port',
    )
  if (
    input.command[0] &&
    input.url === undefined &&
    !replacedBySandbox(input.command, sandboxWanted(input))
  )
    assertCommandExists(input.command[0])
  // A bad audit destination is reported here too (the background process opens it).
  const audit = (input.flags as {'audit-log'?: string})['audit-log']
  if (audit) (await import('../audit/syslog-sink.ts')).parseSyslogTarget(audit)
  if (audit) {
    const {NO_COLLECTOR, otlpLogsConfigured} = await import('../audit/auditor.ts')
    const otel = (input.flags as {'otel-endpoint'?: string})['otel-endpoint']
    if (audit === 'otlp' && !otlpLogsConfigured(otel, process.env))
      throw new ToolgateError('ERR_USAGE', NO_COLLECTOR)
  }
  // A profile that does not load is reported here, not by the background process.
  if (input.permissionProfile !== undefined) loadPermissionProfile(input.permissionProfile)
  // A registry entry is fetched here too, so a bad name, a missing package or a missing required
  // variable is reported by `run` itself, not found later in the background process's log.
  if (input.registry) await buildWorkloadSpec(input, {openStore: () => openSecretStore()})
  return startDetached({
    name: input.name,
    request,
    // The background process has the startup timeout for the server, plus time to start itself.
    timeoutMs: parseDuration(input.startupTimeout, '--startup-timeout') + 15_000,
    ...(options.relay ? {relay: options.relay} : {}),
  })
}

/** The workload's own log: `logs <name> --proxy` reads it; foreground runs show it on stderr too. */
export function workloadLogger(
  name: string,
  flags: {debug: boolean; json: boolean},
  options: {child: boolean},
): Logger {
  const file = new RotatingLog(proxyLogFile(name), {top: xdgDirs().state})
  return createLogger({
    level: flags.debug ? 'debug' : 'info',
    json: flags.json,
    base: {workload: name},
    write: (line) => {
      file.line(line)
      if (!options.child) process.stderr.write(line + '\n')
    },
  })
}

/** The proxy and CAs for every outbound request of this process (issue 34). */
export const configureNetworkFromFlags = (flags: NetworkFlagValues) =>
  void configureFromFlags(flags)

export async function startForeground(
  input: RunInput,
  logger: Logger,
  options: {json: boolean; isTTY: boolean; echo?: ((chunk: Uint8Array) => void) | undefined},
): Promise<RunningWorkload> {
  // Again in the background process of a detached run, which gets the flags, not this process.
  configureFromFlags(input.flags as NetworkFlagValues)
  const spec = await buildWorkloadSpec(input, {openStore: () => openSecretStore({logger})})
  return startWorkload(spec, {
    logger,
    serverLog: new RotatingLog(serverLogFile(input.name), {top: xdgDirs().state}),
    ...(options.echo ? {echo: options.echo} : {}),
    pipeline: {
      logger,
      json: options.json,
      isTTY: options.isTTY,
      write: (text) => logger.info(text.trimEnd()),
    },
  })
}
