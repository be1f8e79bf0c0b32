import {readSecretFile} from '../fs/secret-file.ts'
import {parseDuration} from '../config/duration.ts'
import {ToolgateError} from '../errors.ts'
import type {PipelineFlags} from '../proxy/pipeline.ts'
import type {SecretStore} from '../secrets/index.ts'
import {parseRestartPolicy} from '../supervisor/supervisor.ts'
import type {WorkloadSpec} from './run-workload.ts'
import {
  checkRequiredEnv,
  fetchServerEntry,
  parseServerRef,
  resolveEntry,
  type RegistryResolution,
} from './from-registry.ts'
import {buildServerEnv, parseEnvAssignment, parseSecretMapping} from './server-env.ts'
import {validateWorkloadName, type WorkloadTransport} from './state.ts'
import type {IsolationMode} from '../bridge/isolated-lanes.ts'
import {loadPermissionProfile, withHosts} from '../sandbox/profile.ts'

/**
 * `toolgate run` flags → a WorkloadSpec, with every check that can fail done before anything
 * starts: the name, the transport and its port, the command or URL, durations, env and secrets.
 */

export interface RunInput {
  name: string
  /** Everything after NAME: the server command (after `--`). */
  command: string[]
  transport?: string | undefined
  targetPort?: number | undefined
  url?: string | undefined
  /** `--from-registry <base URL>` with the server reference (`name[@version]`) as the positional. */
  registry?: {base: string; ref: string; tokenFile?: string} | undefined
  proxyPort?: number | undefined
  env: string[]
  envFile?: string | undefined
  secrets: string[]
  requestTimeout: string
  stopTimeout: string
  startupTimeout: string
  restart: string
  /** `--isolation`; undefined: principal with incoming auth, shared without (contract §8). */
  isolation?: string | undefined
  idleTimeout: string
  maxProcesses: number
  /** `--sandbox`/`--no-sandbox`; undefined: on for --from-registry or with a profile. */
  sandbox?: boolean | undefined
  permissionProfile?: string | undefined
  /** `toolgate gateway`: the backends (flags) and the config file (issue 37). */
  gateway?: {backends: string[]; config?: string | undefined} | undefined
  flags: Omit<PipelineFlags, 'target-uri'>
}

/** Whether the server runs sandboxed (issue 32): asked for, implied by a profile, or a registry entry. */
export function sandboxWanted(input: RunInput): boolean {
  return input.sandbox ?? (input.permissionProfile !== undefined || input.registry !== undefined)
}

function checkSandbox(input: RunInput, transport: string): void {
  if (input.sandbox === false && input.permissionProfile !== undefined)
    throw usage('--permission-profile runs the server sandboxed; it cannot go with --no-sandbox')
  if (input.sandbox === true || input.permissionProfile !== undefined) {
    if (transport === 'remote')
      throw usage('--sandbox: a remote server (--url) runs elsewhere; there is nothing to sandbox')
    if (transport !== 'stdio')
      throw usage(
        `--sandbox: only stdio servers can be sandboxed (this one is ${transport}: its port would be inside the sandbox's own network)`,
      )
  }
}

const ISOLATION_MODES: readonly IsolationMode[] = ['shared', 'principal', 'session']

/** The isolation a stdio workload gets: the flag, else `principal` when callers are authenticated. */
export function isolationOf(input: RunInput): IsolationMode {
  if (input.isolation !== undefined) return input.isolation as IsolationMode
  const f = input.flags
  const authOn = Boolean(f['oidc-issuer'] || f['oidc-jwks-url'] || f['oidc-introspection-url'])
  return authOn ? 'principal' : 'shared'
}

function checkIsolation(input: RunInput, transport: string): void {
  if (input.isolation !== undefined) {
    if (!ISOLATION_MODES.includes(input.isolation as IsolationMode))
      throw usage(
        `--isolation: "${input.isolation.slice(0, 40)}" is not a mode; use shared, principal or session`,
      )
    if (transport !== 'stdio')
      throw usage(
        `--isolation: only for stdio servers (this one is ${transport}); one process serves every caller`,
      )
  }
  if (!Number.isInteger(input.maxProcesses) || input.maxProcesses < 1)
    throw usage('--max-processes: give a whole number of at least 1')
  parseDuration(input.idleTimeout, '--idle-timeout')
  if (input.restart !== 'no' && transport === 'stdio' && isolationOf(input) !== 'shared')
    throw usage(
      `--restart: only with --isolation shared; with --isolation ${isolationOf(input)} a caller's next initialize starts a new process`,
    )
}

function usage(message: string): ToolgateError {
  return new ToolgateError('ERR_USAGE', message)
}

/** Checks that need no I/O; the parent of a detached run calls this before starting anything. */
export function checkRunInput(input: RunInput): WorkloadTransport {
  validateWorkloadName(input.name)
  if (input.gateway) {
    // The backends and the config file are checked by gatewaySpec (config.ts loads YAML; a plain
    // workload's background process must not, issue 11).
    for (const [flag, value] of [
      ['--request-timeout', input.requestTimeout],
      ['--stop-timeout', input.stopTimeout],
      ['--startup-timeout', input.startupTimeout],
    ] as const)
      parseDuration(value, flag)
    return 'gateway'
  }
  if (input.registry) {
    if (input.url !== undefined) throw usage('--from-registry and --url: give one of them')
    if (input.transport !== undefined || input.targetPort !== undefined)
      throw usage('--from-registry: the registry entry decides the transport')
    parseServerRef(input.registry.ref)
  } else if (input.url !== undefined) {
    if (input.command.length > 0)
      throw usage('give either a server command after -- or --url, not both')
    if (input.transport !== undefined)
      throw usage('--transport: not used with --url (the remote decides)')
    if (input.targetPort !== undefined) throw usage('--target-port: not used with --url')
    if (input.env.length || input.envFile || input.secrets.length)
      throw usage("-e, --env-file and --secret set a local server's environment; --url has none")
    let u: URL
    try {
      u = new URL(input.url)
    } catch {
      throw usage(`--url: "${input.url.slice(0, 100)}" is not a URL`)
    }
    if (u.protocol !== 'https:' && u.protocol !== 'http:') throw usage('--url: must be http(s)')
    if (input.isolation !== undefined)
      throw usage('--isolation: only for stdio servers; --url fronts one remote server')
    checkSandbox(input, 'remote')
    return 'remote'
  }
  if (input.registry) return 'stdio' // or remote: known once the entry is fetched
  if (input.command.length === 0) {
    throw usage(
      `give the server command after --, e.g. 'toolgate run ${input.name} -- npx -y <package>', or --url`,
    )
  }
  const transport = input.transport ?? 'stdio'
  if (transport === 'stdio') {
    if (input.targetPort !== undefined)
      throw usage('--target-port: only for --transport streamable-http or sse')
  } else if (input.targetPort === undefined) {
    throw usage(`--transport ${transport}: give --target-port, the port the server listens on`)
  }
  input.env.forEach(parseEnvAssignment)
  input.secrets.forEach(parseSecretMapping)
  parseRestartPolicy(input.restart)
  checkIsolation(input, transport)
  checkSandbox(input, transport)
  for (const [flag, value] of [
    ['--request-timeout', input.requestTimeout],
    ['--stop-timeout', input.stopTimeout],
    ['--startup-timeout', input.startupTimeout],
  ] as const)
    parseDuration(value, flag)
  return transport as WorkloadTransport
}

export async function buildWorkloadSpec(
  input: RunInput,
  deps: {openStore: () => Promise<SecretStore>; env?: NodeJS.ProcessEnv},
): Promise<WorkloadSpec> {
  let transport = checkRunInput(input)
  if (input.gateway) return gatewaySpec(input)
  let {url, command} = input
  let resolution: RegistryResolution | undefined
  if (input.registry) {
    resolution = resolveEntry(
      await fetchServerEntry(
        input.registry.base,
        parseServerRef(input.registry.ref),
        input.registry.tokenFile
          ? readSecretFile(input.registry.tokenFile, {what: '--from-registry-token-file'})
          : undefined,
      ),
    )
    transport = resolution.transport
    url = resolution.url
    command = resolution.command ?? []
    if (transport !== 'stdio') checkIsolation(input, transport)
    if (transport !== 'stdio') checkSandbox(input, transport)
    if (url && (input.env.length || input.envFile || input.secrets.length))
      throw usage(
        `--from-registry: ${resolution.serverName} is a remote server; -e, --env-file and --secret do not apply`,
      )
  }
  const secrets = input.secrets.map(parseSecretMapping)
  const env =
    transport === 'remote'
      ? {}
      : await buildServerEnv({
          base: {...(deps.env ?? process.env), ...resolution?.defaults},
          envFile: input.envFile,
          assignments: input.env,
          secrets,
          openStore: deps.openStore,
        })
  if (resolution) checkRequiredEnv(resolution, env)
  return {
    name: input.name,
    transport,
    ...(url !== undefined ? {url} : {command}),
    ...(input.targetPort !== undefined ? {targetPort: input.targetPort} : {}),
    ...(input.proxyPort !== undefined ? {proxyPort: input.proxyPort} : {}),
    env,
    secretNames: secrets.map((s) => s.secret),
    requestTimeoutMs: parseDuration(input.requestTimeout, '--request-timeout'),
    stopTimeoutMs: parseDuration(input.stopTimeout, '--stop-timeout'),
    startupTimeoutMs: parseDuration(input.startupTimeout, '--startup-timeout'),
    restart: parseRestartPolicy(input.restart),
    isolation: transport === 'stdio' ? isolationOf(input) : 'shared',
    ...(transport === 'stdio' && sandboxWanted(input)
      ? {
          sandbox: {
            profile: withHosts(
              loadPermissionProfile(input.permissionProfile ?? 'none'),
              resolution?.hosts ?? [],
              resolution?.ports ?? [],
            ),
            npmRegistry: resolution?.npmRegistry,
            pypiIndex: resolution?.pypiIndex,
          },
        }
      : {}),
    idleTimeoutMs: parseDuration(input.idleTimeout, '--idle-timeout'),
    maxProcesses: input.maxProcesses,
    flags: {...input.flags, 'target-uri': url ?? 'http://localhost'} as PipelineFlags,
  }
}

/** A gateway's spec; its config (YAML, JSON) is read here, the module loaded only for a gateway. */
export async function gatewaySpec(input: RunInput): Promise<WorkloadSpec> {
  const {loadGatewayConfig} = await import('../gateway/config.ts')
  const gateway = loadGatewayConfig(input.gateway!.backends, input.gateway!.config)
  return {
    name: input.name,
    transport: 'gateway',
    gateway,
    ...(input.proxyPort !== undefined ? {proxyPort: input.proxyPort} : {}),
    env: {},
    secretNames: [],
    requestTimeoutMs: parseDuration(input.requestTimeout, '--request-timeout'),
    stopTimeoutMs: parseDuration(input.stopTimeout, '--stop-timeout'),
    startupTimeoutMs: parseDuration(input.startupTimeout, '--startup-timeout'),
    restart: parseRestartPolicy('no'),
    isolation: 'shared',
    idleTimeoutMs: 0,
    maxProcesses: 1,
    flags: {...input.flags, 'target-uri': 'http://localhost'} as PipelineFlags,
  }
}
