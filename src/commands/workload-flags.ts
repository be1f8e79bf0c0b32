import {Flags} from '@oclif/core'

/** The flags of `toolgate run` that are not pipeline flags (contract §5); see src/lib/workloads. */
export const workloadFlags = {
  transport: Flags.string({
    description: 'How the server speaks MCP: stdio (bridged to HTTP) or it listens itself.',
    options: ['stdio', 'streamable-http', 'sse'],
    helpGroup: 'WORKLOAD',
  }),
  'target-port': Flags.integer({
    description:
      'Port the server listens on (--transport streamable-http|sse); set as PORT and MCP_PORT.',
    min: 1,
    max: 65535,
    helpGroup: 'WORKLOAD',
  }),
  url: Flags.string({
    description: 'Front a remote MCP server instead of starting one (https://…).',
    helpGroup: 'WORKLOAD',
  }),
  'from-registry': Flags.string({
    description:
      'Run a server from an MCP registry (API v0.1): the registry base URL; the server name[@version] follows NAME.',
    helpGroup: 'WORKLOAD',
  }),
  'from-registry-token-file': Flags.string({
    description:
      'File holding a bearer token for a protected --from-registry registry (toolgate serve in oauth mode).',
    helpGroup: 'WORKLOAD',
  }),
  env: Flags.string({
    char: 'e',
    description: 'KEY=VALUE for the server environment (repeatable).',
    multiple: true,
    multipleNonGreedy: true,
    helpGroup: 'WORKLOAD',
  }),
  'env-file': Flags.string({
    description: 'File of KEY=VALUE lines for the server.',
    helpGroup: 'WORKLOAD',
  }),
  secret: Flags.string({
    description: '<secret-name>,target=<ENV>: a value from the secrets store (repeatable).',
    multiple: true,
    multipleNonGreedy: true,
    helpGroup: 'WORKLOAD',
  }),
  'request-timeout': Flags.string({
    description: 'A stdio request unanswered this long gets a JSON-RPC error.',
    default: '60s',
    helpGroup: 'WORKLOAD',
  }),
  'startup-timeout': Flags.string({
    description: 'How long the server may take to start (listen, or the detached run to be ready).',
    default: '60s',
    helpGroup: 'WORKLOAD',
  }),
  'stop-timeout': Flags.string({
    description: 'After SIGTERM, how long the server may take before SIGKILL.',
    default: '10s',
    helpGroup: 'WORKLOAD',
  }),
  restart: Flags.string({
    description:
      'no, or on-failure[:N] (restart after a non-zero exit, at most N times, default 5).',
    default: 'no',
    helpGroup: 'WORKLOAD',
  }),
  sandbox: Flags.boolean({
    description:
      'Confine the server with the OS (bubblewrap on Linux, sandbox-exec on macOS) under --permission-profile (default none: no network, no host files but the runtime). Default: on for --from-registry, off otherwise.',
    allowNo: true,
    helpGroup: 'WORKLOAD',
  }),
  'permission-profile': Flags.string({
    description:
      'none, network, or a JSON file ({"read","write","network":{"outbound":{"allow_host","allow_port","insecure_allow_all"}}}): what the sandboxed server may read, write and reach. Implies --sandbox.',
    helpGroup: 'WORKLOAD',
  }),
  isolation: Flags.string({
    description:
      'stdio servers: one process for every caller (shared), one per authenticated principal, or one per client session. Default: principal with incoming auth, else shared.',
    options: ['shared', 'principal', 'session'],
    helpGroup: 'WORKLOAD',
  }),
  'idle-timeout': Flags.string({
    description:
      "--isolation principal: stop a caller's process this long after its last session ended.",
    default: '10m',
    helpGroup: 'WORKLOAD',
  }),
  'max-processes': Flags.integer({
    description:
      '--isolation principal|session: at most this many server processes (past it, 503 with Retry-After).',
    default: 16,
    min: 1,
    max: 4096,
    helpGroup: 'WORKLOAD',
  }),
  'proxy-port': Flags.integer({
    description: 'Port of the proxy front (default: a free port).',
    min: 0,
    max: 65535,
    helpGroup: 'LISTEN',
  }),
  foreground: Flags.boolean({
    description: 'Stay attached; stop the workload on SIGINT/SIGTERM.',
    default: false,
    helpGroup: 'WORKLOAD',
  }),
  // The background half of a detached run (its arguments arrive on stdin).
  'workload-child': Flags.boolean({hidden: true, default: false, helpGroup: 'WORKLOAD'}),
}
