import type {Server} from 'node:http'
import {createServer} from '../http/node-http.ts'
import {createAuthenticator} from '../auth/index.ts'
import type {BearerAuthenticator} from '../auth/types.ts'
import type {ServeConfig} from '../config/serve-config.ts'
import {
  allInterfaces,
  boundOf,
  closeGracefully,
  listen,
  urlOf,
  type HostPort,
} from '../http/listen.ts'
import type {Logger} from '../log/logger.ts'
import {createServeMetrics} from '../metrics/serve-metrics.ts'
import {buildOpenApi} from '../registry-api/openapi.ts'
import {PostgresRegistryStore} from '../registry/postgres-store.ts'
import {SqliteRegistryStore} from '../registry/sqlite-store.ts'
import type {RegistryPolicyRuntime} from '../registry-authz/policy-runtime.ts'
import {keepYoungGenerationSmall} from '../runtime/young-generation.ts'
import {versionInfo} from '../version.ts'
import {createAuthGate} from './auth-gate.ts'
import {createInternalHandler} from './internal-handler.ts'
import {createMainHandler} from './main-handler.ts'
import {protectedResourceMetadata} from './protected-resource.ts'
import {createServeStore, describeStorage, openServeStore} from './serve-store.ts'
import {createSourceRuntime, storeSamples, type SourceRuntime} from './sources.ts'
import {Publisher} from '../registry-publish/publisher.ts'
import {RateLimiter} from './rate-limit.ts'

/**
 * Starts `toolgate serve` (contract §1): store, initial load of every source, the main server and
 * the internal server. Resolves once both listen; `close()` shuts down gracefully (stop accepting,
 * finish in-flight requests within `graceMs`, stop syncers, close the store).
 */
export interface ServeOptions {
  address: HostPort
  internalAddress: HostPort
  logger: Logger
  /** Bound on finishing in-flight requests at shutdown. */
  graceMs?: number
  /** `--audit-log`: registry reads and refused tokens (issue 35). */
  auditLog?: string
  /** Injected for tests; defaults to the library's validator. */
  authenticatorFactory?: (
    config: Extract<ServeConfig['auth'], {mode: 'oauth'}>['oauth'],
    logger: Logger,
  ) => BearerAuthenticator
}

export interface ServeHandle {
  url: string
  internalUrl: string
  /** The bound `host:port` (`[::]:8080` when listening on every interface). */
  address: string
  internalAddress: string
  /** Whether each server accepts connections on every interface (not loopback only). */
  allInterfaces: boolean
  internalAllInterfaces: boolean
  authMode: ServeConfig['auth']['mode']
  close(): Promise<void>
}

export async function startServe(config: ServeConfig, opts: ServeOptions): Promise<ServeHandle> {
  const {logger} = opts
  keepYoungGenerationSmall()
  const cleanups: (() => Promise<void>)[] = []
  const cleanup = async () => {
    for (const fn of cleanups.reverse())
      await fn().catch((err: unknown) => logger.warn('shutdown step failed', {err: err as Error}))
  }
  try {
    const store = createServeStore(config)
    const shared = store instanceof PostgresRegistryStore ? store : undefined
    const starting = new AbortController()
    cleanups.push(async () => starting.abort())
    cleanups.push(() => store.close())

    const metrics = createServeMetrics()
    metrics.setVersionCounter(() => store.countVersions())
    if (shared) metrics.setStoreSamples(() => storeSamples(shared))

    const sources: SourceRuntime = createSourceRuntime(config.sources, store, logger, shared)
    metrics.setSourceSamples(() => sources.samples())
    const graceMs = opts.graceMs ?? 10_000

    // The internal server comes up first so probes see /health 200 and /readiness 503 while a
    // large source loads; the main port opens only once every source has loaded.
    const internal = hardened(
      createServer(
        createInternalHandler({
          store,
          sourcesLoaded: () => sources.isReady(),
          metrics: metrics.registry,
          logger,
        }),
      ),
    )
    const internalInfo = await listen(internal, opts.internalAddress, '--internal-address')
    cleanups.push(() => closeGracefully(internal, graceMs))
    logger.info('internal server listening', {
      address: boundOf(internalInfo),
      all_interfaces: allInterfaces(internalInfo),
      url: urlOf(internalInfo),
    })

    // After the internal server: while the database is away, /health answers and /readiness
    // says not ready (the store does not answer), instead of the process crash-looping.
    await openServeStore(store, {logger, signal: starting.signal})
    if (store instanceof SqliteRegistryStore && store.movedAside)
      logger.warn('database file was corrupt: moved aside, rebuilding it from the sources', {
        path: store.path,
        moved_to: store.movedAside,
      })
    await store.setRegistries(config.registries)
    logger.info('storage ready', describeStorage(config))

    cleanups.push(() => sources.stop())
    await sources.start()

    let authenticator: BearerAuthenticator | undefined
    if (config.auth.mode === 'oauth') {
      const factory = opts.authenticatorFactory ?? ((c, l) => createAuthenticator(c, {logger: l}))
      authenticator = factory(config.auth.oauth, logger.child({component: 'auth'}))
      cleanups.push(() => authenticator!.close())
      logger.info('oauth mode', {
        resource: config.auth.oauth.resourceUrl,
        providers: config.auth.oauth.providers.map((p) => p.name).join(','),
      })
    } else {
      logger.warn(
        '!!! ANONYMOUS MODE: authentication is OFF; every registry route is open to anyone who can reach this port. ' +
          'Use only for development or behind another authenticating layer. !!!',
      )
    }

    let policy: RegistryPolicyRuntime | undefined
    if (config.authz) {
      const {RegistryPolicyRuntime} = await import('../registry-authz/policy-runtime.ts')
      policy = await RegistryPolicyRuntime.start(config.authz, {
        logger: logger.child({component: 'authz'}),
        dataVersion: () => store.dataVersion(),
      })
      cleanups.push(async () => policy!.close())
    }

    const oauth = config.auth.mode === 'oauth' ? config.auth.oauth : undefined
    const auditor = opts.auditLog ? await openAuditor(opts.auditLog, logger) : undefined
    if (auditor) cleanups.push(async () => auditor.close())
    const mainHandler = createMainHandler({
      auditor,
      limits: {
        read: config.rateLimits.read && new RateLimiter(config.rateLimits.read),
        publish: new RateLimiter(config.rateLimits.publish),
      },
      publisher: new Publisher({
        store,
        managedSourceOf: managedSources(config),
        sync: (source) => sources.syncNow(source),
        policy: () => policy?.current(),
      }),
      store,
      logger: logger.child({component: 'http'}),
      metrics,
      openApiJson: JSON.stringify(
        buildOpenApi({
          version: versionInfo().version,
          oauth: oauth !== undefined,
          registries: config.registries.map((r) => r.name),
        }),
      ),
      protectedResourceJson: oauth ? protectedResourceMetadata(oauth) : undefined,
      policy: policy && (() => policy.current()),
      gate:
        oauth && authenticator
          ? createAuthGate(oauth, authenticator, logger.child({component: 'auth'}), {
              // Who is calling matters on a public path to the policy and to per-caller limits.
              identifyOnPublicPaths: policy !== undefined || config.rateLimits.read !== undefined,
            })
          : undefined,
    })
    // Headers up to 96 KB: an oversized bearer token must reach the gate and get the contract's
    // 401 with its challenge, not node:http's bare 431 at the default 16 KB.
    const main = hardened(createServer({maxHeaderSize: 96 * 1024}, mainHandler))
    const mainInfo = await listen(main, opts.address, '--address')
    cleanups.push(() => closeGracefully(main, graceMs))
    // The bound address, not the loopback URL: `:8080` listens on every interface and says so.
    logger.info('main server listening', {
      address: boundOf(mainInfo),
      all_interfaces: allInterfaces(mainInfo),
      url: urlOf(mainInfo),
    })
    if (config.auth.mode === 'anonymous' && allInterfaces(mainInfo))
      logger.warn(
        `!!! ANONYMOUS MODE ON EVERY INTERFACE: anyone on the network can read these registries. For this machine only, pass --address 127.0.0.1:${mainInfo.port} !!!`,
      )

    let closing: Promise<void> | undefined
    return {
      url: urlOf(mainInfo),
      internalUrl: urlOf(internalInfo),
      address: boundOf(mainInfo),
      internalAddress: boundOf(internalInfo),
      allInterfaces: allInterfaces(mainInfo),
      internalAllInterfaces: allInterfaces(internalInfo),
      authMode: config.auth.mode,
      close: () => (closing ??= cleanup()),
    }
  } catch (err) {
    await cleanup()
    throw err
  }
}

/** `serve --audit-log`: a file, `-`, syslog, or `otlp` (to OTEL_EXPORTER_OTLP_ENDPOINT). */
async function openAuditor(log: string, logger: Logger) {
  const {Auditor, openOtlpSink} = await import('../audit/auditor.ts')
  const otlp = await openOtlpSink(log, undefined, process.env, 'serve')
  return new Auditor({log, workload: 'serve', target: '', otlp}, logger)
}

/** Each registry's first managed source: where its publishes go. */
function managedSources(config: ServeConfig): (registry: string) => string | undefined {
  const managed = new Set(config.sources.filter((s) => s.kind === 'managed').map((s) => s.name))
  const byRegistry = new Map<string, string>()
  for (const r of config.registries) {
    const first = r.sources.find((s) => managed.has(s))
    if (first !== undefined) byRegistry.set(r.name, first)
  }
  return (registry) => byRegistry.get(registry)
}

// Bounds on slow clients (slowloris): headers within 10 s, a whole request within 30 s.
function hardened(server: Server): Server {
  server.headersTimeout = 10_000
  server.requestTimeout = 30_000
  server.keepAliveTimeout = 5_000
  return server
}
