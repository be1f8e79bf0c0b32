import type {BearerAuthenticator} from '../auth/types.ts'
import type {ResourceAttributes} from '../authz/entity-model.ts'
import {ToolgateError} from '../errors.ts'
import type {Logger} from '../log/logger.ts'
import type {RemoteAuth, RemoteAuthFlags} from '../oauth/index.ts'
import {keepYoungGenerationSmall} from '../runtime/young-generation.ts'
import {incomingAuthEnabled} from './incoming-auth.ts'
import {proxyConfigFromFlags, type ProxyFlags} from './options.ts'
import type {ProxyConfig, RunningProxy} from './proxy-server.ts'
import type {ProxyMetrics} from '../metrics/proxy-metrics.ts'

/**
 * Every flag of the request pipeline (contract §3): listen/limits/Origin, incoming OIDC, Cedar,
 * outgoing credentials, header injection. `proxy`, `run` and `proxy stdio` share these, so a flag
 * added once (src/commands/pipeline-flags.ts) works in all of them.
 */
export type PipelineFlags = ProxyFlags &
  RemoteAuthFlags & {
    'remote-forward-headers-secret'?: string[]
    'authz-config'?: string
    'internal-address'?: string
    'otel-endpoint'?: string
    'audit-log'?: string
    'audit-include-args'?: boolean
    'audit-redact-keys'?: string
  }

export interface PipelineDeps {
  logger: Logger
  /** `--json`: remote-login progress as JSON-line events. */
  json: boolean
  /** Where remote-login progress goes (stderr; stdout may be a protocol channel). */
  write: (text: string) => void
  isTTY: boolean
  env?: NodeJS.ProcessEnv
  /** Injected validator (tests); default: the shared one built from the `--oidc-*` flags. */
  authenticator?: BearerAuthenticator
  /** Attributes Cedar sees on resources beyond the request's own (a gateway's `backend`). */
  authzResourceAttributes?: ResourceAttributes
}

export interface PreparedPipeline {
  config: ProxyConfig
  /** `--internal-address` and its metrics, served once the proxy listens. */
  metrics?: {address: string; observer: ProxyMetrics}
  /** Present when `--remote-auth` is on: its login runs after the port is bound. */
  remoteAuth?: RemoteAuth
}

/**
 * Flags → a complete proxy configuration, with every check that can fail done now, before anything
 * listens: flag errors, a missing header secret, a bad policy file, remote-auth options.
 */
export async function preparePipeline(
  name: string,
  flags: PipelineFlags,
  deps: PipelineDeps,
): Promise<PreparedPipeline> {
  const {logger} = deps
  // Loaded when used, not at the top: a command that never proxies (or `--help`), and a workload
  // that names no secret, must not pay for the secrets store, Cedar or OAuth modules (issue 11).
  // Literal specifiers keep the bundle (esbuild) complete.
  const secrets = () => import('../secrets/index.ts')
  const openSecretStore = async (opts: {logger: Logger}) => (await secrets()).openSecretStore(opts)
  const config = proxyConfigFromFlags(name, flags, {logger, ...(deps.env ? {env: deps.env} : {})})
  const headerSecrets = flags['remote-forward-headers-secret'] ?? []
  if (headerSecrets.length > 0) {
    // Resolved once at startup: a missing secret stops the proxy before it listens.
    const {overrideForwardHeaders, resolveForwardHeaderSecrets} = await secrets()
    const fromSecrets = await resolveForwardHeaderSecrets(
      headerSecrets,
      await openSecretStore({logger}),
    )
    config.forwardHeaders = overrideForwardHeaders(config.forwardHeaders, fromSecrets)
  }
  // Loaded before listening: a bad policy file refuses to start, naming the policy index.
  if (flags['authz-config']) {
    // Policies decide on the token's subject and claims: without incoming authentication every
    // request would be anonymous and denied, a proxy that only ever answers 403.
    if (!incomingAuthEnabled(config.oidc)) {
      throw new ToolgateError(
        'ERR_USAGE',
        '--authz-config: authorization needs an authenticated principal; add incoming token validation with --oidc-issuer (or --oidc-jwks-url, or --oidc-introspection-url with --oidc-client-id/--oidc-client-secret)',
      )
    }
    const {loadAuthzInterceptor} = await import('../authz/index.ts')
    config.interceptor = await loadAuthzInterceptor(flags['authz-config'], {
      logger,
      ...(deps.authzResourceAttributes ? {resourceAttributes: deps.authzResourceAttributes} : {}),
    })
  }
  // The audit file is opened now: a file another process writes, or a damaged chain, is found
  // before anything listens.
  if (flags['audit-log']) {
    const {Auditor, openOtlpSink} = await import('../audit/auditor.ts')
    const otlp = await openOtlpSink(
      flags['audit-log'],
      flags['otel-endpoint'],
      deps.env ?? process.env,
      name,
    )
    ;(config.observers ??= []).push(
      new Auditor(
        {
          log: flags['audit-log'],
          includeArgs: flags['audit-include-args'] === true,
          redactKeys: (flags['audit-redact-keys'] ?? '')
            .split(',')
            .map((k) => k.trim())
            .filter(Boolean),
          workload: name,
          target: flags['target-uri'],
          otlp,
        },
        logger,
      ),
    )
  }
  // Tracing only when an OTLP endpoint is configured: the SDK is not even loaded otherwise.
  const env = deps.env ?? process.env
  if (
    flags['otel-endpoint'] ||
    env.OTEL_EXPORTER_OTLP_ENDPOINT ||
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
  ) {
    const {tracingFromEnv} = await import('../telemetry/tracing.ts')
    const tracing = tracingFromEnv(flags['otel-endpoint'], env)
    if (tracing) config.tracing = tracing
  }
  let metrics: PreparedPipeline['metrics']
  if (flags['internal-address']) {
    const {parseListenAddress} = await import('../http/listen.ts')
    parseListenAddress(flags['internal-address'], '--internal-address')
    const observer = new (await import('../metrics/proxy-metrics.ts')).ProxyMetrics()
    metrics = {address: flags['internal-address'], observer}
    ;(config.observers ??= []).push(observer)
    const auditor = config.observers.find((o) => 'dropped' in o) as {dropped: number} | undefined
    if (auditor) observer.countDropped(() => auditor.dropped)
  }
  // Remote OAuth (src/lib/oauth): flags and the secrets store are checked now, the login runs
  // once the port is bound, so a busy --port is reported before anyone is sent to a browser.
  // The OAuth client (oauth4webapi, jose, the browser opener) is loaded only when --remote-auth
  // asks for it: a workload's background process stays smaller (issue 11). Without it, the light
  // options module still refuses another OAuth flag given without --remote-auth.
  let remoteAuth: RemoteAuth | undefined
  if (flags['remote-auth']) {
    const {remoteAuthFromFlags} = await import('../oauth/index.ts')
    remoteAuth = await remoteAuthFromFlags(flags, flags['target-uri'], {
      logger,
      openStore: () => openSecretStore({logger}),
      write: deps.write,
      json: deps.json,
      isTTY: deps.isTTY,
      ...(deps.env ? {env: deps.env} : {}),
    })
  } else {
    const {remoteAuthOptionsFromFlags} = await import('../oauth/remote-auth-options.ts')
    await remoteAuthOptionsFromFlags(flags, flags['target-uri'], deps.env ? {env: deps.env} : {})
  }
  if (remoteAuth) {
    if (config.forwardIncomingToken) {
      await remoteAuth.source.close()
      throw new ToolgateError(
        'ERR_USAGE',
        '--remote-forward-incoming-token: --remote-auth already supplies the outgoing token that replaces the client one',
      )
    }
    config.upstreamToken = remoteAuth.source
  }
  return {config, ...(remoteAuth ? {remoteAuth} : {}), ...(metrics ? {metrics} : {})}
}

export interface Pipeline {
  proxy: RunningProxy
  config: ProxyConfig
  /** With --internal-address: the metrics, for what the caller can add (run: processes, egress). */
  metrics?: ProxyMetrics
  /**
   * The remote login, when one is configured (resolves at once otherwise). Until it is done,
   * clients get 503 with Retry-After (the token source has no token yet).
   */
  login(): Promise<void>
  close(): Promise<void>
}

/**
 * Prepares and starts the pipeline. `overrides` adjusts the configuration before it listens (for
 * `run`: the port flag's name, the private socket of a stdio bridge as the target).
 */
export async function startPipeline(
  name: string,
  flags: PipelineFlags,
  deps: PipelineDeps,
  overrides: Partial<ProxyConfig> = {},
): Promise<Pipeline> {
  return startPrepared(await preparePipeline(name, flags, deps), deps, overrides)
}

/** Whether a prepared pipeline changes anything on the way out (credentials, headers). */
export function addsCredentials(prepared: PreparedPipeline): boolean {
  const c = prepared.config
  return Boolean(c.upstreamToken || c.tokenExchange || c.forwardHeaders.length > 0)
}

/** Starts a pipeline from preparePipeline's result (checks done, nothing listening yet). */
export async function startPrepared(
  prepared: PreparedPipeline,
  deps: PipelineDeps,
  overrides: Partial<ProxyConfig> = {},
): Promise<Pipeline> {
  const config = Object.assign(prepared.config, overrides)
  keepYoungGenerationSmall()
  const {startProxy} = await import('./proxy-server.ts')
  const proxy = await startProxy(config, {
    logger: deps.logger,
    ...(deps.authenticator ? {authenticator: deps.authenticator} : {}),
  }).catch(async (err: unknown) => {
    await prepared.remoteAuth?.source.close()
    throw err
  })
  const internal = prepared.metrics
    ? await (
        await import('../metrics/internal-server.ts')
      )
        .startInternalServer(prepared.metrics.address, {
          metrics: prepared.metrics.observer.registry,
          logger: deps.logger,
          ready: () => true,
        })
        .catch(async (err: unknown) => {
          await proxy.close()
          throw err
        })
    : undefined
  const metrics = prepared.metrics?.observer
  metrics?.watch('sessions', () => proxy.sessions())
  return {
    proxy,
    config,
    ...(metrics ? {metrics} : {}),
    login: () => prepared.remoteAuth?.login() ?? Promise.resolve(),
    close: async () => {
      await proxy.close()
      await internal?.close()
    },
  }
}

/**
 * Runs the remote login (if any), then serves until SIGINT/SIGTERM, closing gracefully. A login
 * interrupted by a signal is a normal shutdown; a failed login closes the pipeline and rejects.
 * `announce` runs once the signal handlers are in place: a script that reads the startup line and
 * signals at once must find them there, not Node's default (exit by signal). `onStop` runs after
 * the pipeline closed (e.g. stop the workload's server).
 */
export async function serveUntilSignal(
  pipeline: Pipeline,
  logger: Logger,
  announce: () => void = () => undefined,
  onStop: () => Promise<void> = async () => undefined,
): Promise<void> {
  let stopping = false
  const stopped = new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      if (stopping) return
      stopping = true
      logger.info('shutting down', {signal})
      pipeline
        .close()
        .then(onStop)
        .then(resolve, () => resolve())
    }
    process.once('SIGINT', () => stop('SIGINT'))
    process.once('SIGTERM', () => stop('SIGTERM'))
  })
  announce()
  try {
    await pipeline.login()
  } catch (err) {
    if (!stopping) {
      await pipeline.close()
      await onStop()
      throw err
    }
  }
  await stopped
}
