/**
 * Registry domain types shared by the store, the sources and the HTTP API (contract §1,
 * MCP registry API v0.1). The store sits behind `RegistryStore` so that a PostgreSQL backend can
 * implement the same interface later.
 */

/** An MCP `server.json` document. Only `name` and `version` are required by us; the rest passes through. */
export interface ServerJson {
  $schema?: string
  name: string
  version: string
  description?: string
  title?: string
  websiteUrl?: string
  icons?: unknown[]
  repository?: Record<string, unknown>
  packages?: Record<string, unknown>[]
  remotes?: Record<string, unknown>[]
  _meta?: Record<string, unknown>
  [key: string]: unknown
}

export const OFFICIAL_META_KEY = 'io.modelcontextprotocol.registry/official'

export interface OfficialMeta {
  status: 'active' | 'deprecated' | 'deleted'
  publishedAt: string // RFC 3339
  updatedAt: string // RFC 3339
  isLatest: boolean
}

/** One element of a list response, and the body of a single-version response. */
export interface ServerEntry {
  server: ServerJson
  _meta: {[OFFICIAL_META_KEY]: OfficialMeta}
}

export interface ListQuery {
  /** Opaque keyset cursor from a previous page's `nextCursor`; the store validates it (ERR_BAD_PARAMETER). */
  cursor?: string
  /** 1..100, already validated by the HTTP layer. */
  limit: number
  /** Case-insensitive substring of name, title or description. */
  search?: string
  /** Only versions updated strictly after this instant. */
  updatedSince?: Date
  /** An exact version, or `latest` for the latest version of each server. */
  version?: string
  /** `transport`, `type`, `registryType` filters as trait bits (traits.ts): all must be set. */
  traits?: number
}

export interface ListResult {
  servers: ServerEntry[]
  nextCursor?: string
}

export interface RegistryDefinition {
  name: string
  /** Source names in precedence order: a server name present in two sources is served from the first. */
  sources: string[]
}

export interface SyncStats {
  source: string
  versions: number
  added: number
  updated: number
  removed: number
  /** Records refused by the store (invalid name/version, or a duplicate name+version in one source). */
  skipped?: number
}

export interface ReplaceSourceOptions {
  /**
   * Keep the upstream `io.modelcontextprotocol.registry/official` block found in each record's
   * `_meta` (status, publishedAt, updatedAt, isLatest). Set for api sources, whose upstream is a
   * registry that owns that block; other sources' official blocks are stripped and ignored.
   */
  trustOfficialMeta?: boolean
  /**
   * The sync lease this replica holds for the source (SyncCoordinator.claim): the store commits
   * only while it is still ours, and releases it in the same commit.
   */
  lease?: SyncLease
}

/** An opaque proof of holding a source's sync lease (shared stores, see SyncCoordinator). */
export interface SyncLease {
  holder: string
  token: number
}

/**
 * The outcome of asking to sync a source on a store shared by several replicas: `claimed` (sync
 * it now, holding the lease), `fresh` (another replica synced it less than an interval ago), or
 * `busy` (another replica is syncing it).
 */
export type SyncClaim =
  | {kind: 'claimed'; lease: SyncLease}
  | {kind: 'fresh'; lastSuccessAt: Date | undefined}
  | {kind: 'busy'; holder: string}

/** Coordination of source syncs through a store shared by several `serve` replicas. */
export interface SyncCoordinator {
  /** Lease duration; a holder renews it every third of it while syncing. */
  readonly leaseMs: number
  /** `force`: sync even when another replica synced less than an interval ago (file sources at start). */
  claimSync(source: string, intervalMs: number | undefined, force: boolean): Promise<SyncClaim>
  /** False when the lease was lost (expired, taken over). */
  renewSync(source: string, lease: SyncLease): Promise<boolean>
  /** Gives the lease back after a failed sync. */
  abandonSync(source: string, lease: SyncLease): Promise<void>
}

export interface RegistryStore {
  /** Runs schema migrations (versioned); safe to call on every start. */
  init(): Promise<void>
  close(): Promise<void>
  /** Throws when the storage does not answer (used by /readiness). */
  ping(): Promise<void>
  /** Declares which registries exist and which sources feed them, in order. */
  setRegistries(registries: RegistryDefinition[]): Promise<void>
  hasRegistry(name: string): boolean
  /**
   * Replaces everything a source holds with `servers` (one transaction), keeping publishedAt of
   * unchanged versions. `servers` is consumed once, in order (a lazy iterable keeps memory flat).
   */
  replaceSource(
    source: string,
    servers: Iterable<ServerJson>,
    now: Date,
    options?: ReplaceSourceOptions,
  ): Promise<SyncStats>
  /** Drops the data of every source not named (sources removed from the configuration). */
  retainSources?(sources: string[]): Promise<void>
  /** Throws ERR_REGISTRY_NOT_FOUND for an unknown registry and ERR_BAD_PARAMETER for a bad cursor. */
  listServers(registry: string, query: ListQuery): Promise<ListResult>
  /** All versions of one server, or undefined when the registry has no server of that name. */
  listVersions(registry: string, name: string): Promise<ServerEntry[] | undefined>
  /** One version (`latest` allowed), or undefined. */
  getVersion(registry: string, name: string, version: string): Promise<ServerEntry | undefined>
  /** Total stored versions, for metrics. */
  countVersions(): Promise<number>
  /**
   * Records a version published to a managed source: `exists` (nothing written) when that source
   * already has this name and version, whatever its status.
   */
  publishVersion(source: string, version: PublishedInput, now: Date): Promise<'created' | 'exists'>
  /** Sets a published version's status; false when the source has no such version. */
  setPublishedStatus(
    source: string,
    name: string,
    version: string,
    status: OfficialMeta['status'],
    now: Date,
  ): Promise<boolean>
  /** Everything published to a managed source, ordered by name then version. */
  publishedVersions(source: string): Promise<PublishedVersion[]>
}

/** What a publish stores: the document (official `_meta` already stripped) and who sent it. */
export interface PublishedInput {
  name: string
  version: string
  /** The server.json text as it will be served (without the official `_meta` block). */
  serverJson: string
  /** `<issuer> <subject>` of the publisher, or `anonymous`. */
  publishedBy: string
}

export interface PublishedVersion extends PublishedInput {
  status: OfficialMeta['status']
  publishedAt: string
  updatedAt: string
}

// ----- source configuration (validated by src/lib/config, consumed by src/lib/registry/sources) -----

export interface NameFilter {
  include?: string[]
  exclude?: string[]
}

export interface SourceConfigBase {
  name: string
  /** Milliseconds; required for api and url sources, optional for file paths (which are also watched). */
  syncIntervalMs?: number
  filter?: {names?: NameFilter}
}

export interface FileSourceConfig extends SourceConfigBase {
  kind: 'file'
  path?: string
  url?: string
}

export interface ApiSourceConfig extends SourceConfigBase {
  kind: 'api'
  endpoint: string
}

/** A registry file in a git repository, fetched with the system git (sources/git-source.ts). */
export interface GitSourceConfig extends SourceConfigBase {
  kind: 'git'
  url: string
  /** Branch, tag or commit; default the remote's HEAD. */
  ref?: string
  /** The registry file's path inside the repository. */
  path: string
  /** https: a token sent as the password of HTTP Basic (user `username`). */
  tokenFile?: string
  username?: string
  /** ssh: the private key, and the known_hosts the server must be in. */
  sshKeyFile?: string
  knownHostsFile?: string
}

/** A source fed by `POST …/v0.1/publish` (registry-publish/): its data lives in the store. */
export interface ManagedSourceConfig extends SourceConfigBase {
  kind: 'managed'
}

export type SourceConfig =
  FileSourceConfig | ApiSourceConfig | ManagedSourceConfig | GitSourceConfig
