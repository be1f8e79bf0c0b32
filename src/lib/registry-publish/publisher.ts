import type {Principal} from '../auth/types.ts'
import type {Decision} from '../authz/authorizer.ts'
import {ToolgateError} from '../errors.ts'
import {checkRecord, prepareRecord} from '../registry/record.ts'
import {
  OFFICIAL_META_KEY,
  type OfficialMeta,
  type PublishedVersion,
  type RegistryStore,
  type ServerEntry,
  type ServerJson,
} from '../registry/types.ts'
import type {RegistryPolicy, RegistryWriteAction} from '../registry-authz/registry-policy.ts'

/**
 * Publishing to a registry's managed source (docs/registry-publish.md). The order of checks is
 * the order a client can fix things in: which registry, what was sent, who sent it, and only then
 * the store; a version is written once (the store's key decides races) and synced at once, so it
 * is listed and searchable when the answer arrives.
 */
export interface PublisherOptions {
  store: RegistryStore
  /** The managed source that takes publishes for a registry: the first one it lists. */
  managedSourceOf: (registry: string) => string | undefined
  /** Syncs a source now and resolves when done (SourceSyncer.syncNow); throws on failure. */
  sync: (source: string) => Promise<void>
  /** The registry policy in force; undefined when none is configured (publishing is then refused). */
  policy: () => RegistryPolicy | undefined
  now?: () => Date
}

/** What the audit record of a write says, beyond the request. */
export interface WriteFacts {
  action: RegistryWriteAction
  name?: string
  version?: string
  status?: OfficialMeta['status']
  decision?: {allowed: boolean; policies: string[]}
}

export class PublishRefused extends ToolgateError {
  readonly problems: {pointer: string; message: string}[]
  constructor(problems: {pointer: string; message: string}[]) {
    const first = problems[0]!
    super(
      'ERR_BAD_PARAMETER',
      `server.json is invalid: ${first.pointer || '(document)'}: ${first.message}` +
        (problems.length > 1 ? ` (and ${problems.length - 1} more)` : ''),
    )
    this.problems = problems
  }
}

const STATUSES = new Set(['active', 'deprecated', 'deleted'])

export class Publisher {
  readonly #o: PublisherOptions
  readonly #now: () => Date

  constructor(options: PublisherOptions) {
    this.#o = options
    this.#now = options.now ?? (() => new Date())
  }

  /** `POST /registry/{r}/v0.1/publish`; returns the entry as the registry now serves it. */
  async publish(
    registry: string,
    body: unknown,
    caller: Principal | undefined,
    facts: WriteFacts,
  ): Promise<ServerEntry> {
    const source = this.sourceFor(registry)
    // ajv is loaded on the first publish, not at every start of serve.
    const {checkServerJson} = await import('./validate.ts')
    // The store's own rules first (nesting depth, control characters, reserved versions): what is
    // accepted here is what a sync serves, and nothing below recurses into a hostile depth.
    const stored = checkRecord(body)
    const problems = checkServerJson(body)
    if (stored && !problems.some((p) => p.pointer === `/${stored.field}`))
      problems.unshift({pointer: `/${stored.field}`, message: stored.reason})
    if (problems.length > 0) throw new PublishRefused(problems)
    const server = withoutOfficialMeta(body as ServerJson)
    facts.name = server.name
    facts.version = server.version
    const draft: ServerEntry = {server, _meta: {[OFFICIAL_META_KEY]: officialDraft()}}
    this.#authorize(caller, 'publish', registry, draft, facts)
    await this.#refuseForeignName(registry, source, server.name)
    const serverJson = prepareRecord(server, false).json
    const outcome = await this.#o.store.publishVersion(
      source,
      {name: server.name, version: server.version, serverJson, publishedBy: publisherOf(caller)},
      this.#now(),
    )
    if (outcome === 'exists') {
      // The same document again is a retry (a lost answer, a failed sync): done, not a conflict.
      const row = await this.#row(source, server.name, server.version)
      if (row?.serverJson !== serverJson) {
        throw new ToolgateError(
          'ERR_CONFLICT',
          `version ${server.version} of ${server.name} is already published; publish a new version`,
        )
      }
    }
    await this.#o.sync(source)
    return this.#served(registry, server.name, server.version)
  }

  /** `PATCH …/servers/{name}/versions/{version}/status` with `{"status": "…"}`. */
  async setStatus(
    registry: string,
    name: string,
    version: string,
    body: unknown,
    caller: Principal | undefined,
    facts: WriteFacts,
  ): Promise<ServerEntry> {
    facts.name = name
    facts.version = version
    const source = this.sourceFor(registry)
    const status = statusOf(body)
    facts.status = status
    const row = await this.#row(source, name, version)
    if (!row) throw new ToolgateError('ERR_NOT_FOUND', 'not found')
    // As served (isLatest as readers see it) when it is this version that is served; from the
    // table when another source's entry of that name is served instead.
    const served = await this.#o.store.getVersion(registry, name, version)
    const ours = served?._meta[OFFICIAL_META_KEY]?.publishedAt === row.publishedAt
    const entry = served && ours ? served : entryOf(row)
    try {
      this.#authorize(caller, 'set_status', registry, entry, facts)
    } catch (err) {
      // A version the caller may not even see is "not found", as on the read routes: a refusal
      // must not tell a caller that a server hidden from them exists.
      const policy = this.#o.policy()
      if (
        policy &&
        !policy.viewer(caller).allows('get_server', registry, name, version, () => entry)
      )
        throw new ToolgateError('ERR_NOT_FOUND', 'not found')
      throw err
    }
    await this.#o.store.setPublishedStatus(source, name, version, status, this.#now())
    await this.#o.sync(source)
    return this.#served(registry, name, version)
  }

  /** The managed source that takes the registry's writes: 404 unknown registry, 403 none. */
  sourceFor(registry: string): string {
    if (!this.#o.store.hasRegistry(registry))
      throw new ToolgateError('ERR_REGISTRY_NOT_FOUND', 'registry not found')
    const source = this.#o.managedSourceOf(registry)
    if (source === undefined) {
      throw new ToolgateError(
        'ERR_FORBIDDEN',
        `registry "${registry}" has no managed source to publish to (serve.yaml: sources[].managed)`,
      )
    }
    return source
  }

  #authorize(
    caller: Principal | undefined,
    action: RegistryWriteAction,
    registry: string,
    entry: ServerEntry,
    facts: WriteFacts,
  ): void {
    const policy = this.#o.policy()
    if (!policy) {
      facts.decision = {allowed: false, policies: []}
      throw new ToolgateError(
        'ERR_FORBIDDEN',
        `${action} needs a registry policy (auth.authz) that permits Action::"${action}"`,
      )
    }
    const decision: Decision = policy.decideWrite(caller, action, registry, entry)
    facts.decision = {allowed: decision.allowed, policies: decision.policies}
    if (!decision.allowed) {
      throw new ToolgateError(
        'ERR_FORBIDDEN',
        `not permitted to ${action === 'publish' ? 'publish' : 'change the status of'} ` +
          `${entry.server.name} in registry "${registry}"`,
      )
    }
  }

  /**
   * A name another source of the registry serves stays that source's: a version published here
   * would either never be seen (that source comes first) or hide all of its versions.
   */
  async #refuseForeignName(registry: string, source: string, name: string): Promise<void> {
    const served = await this.#o.store.listVersions(registry, name)
    if (!served || served.length === 0) return
    const ours = (await this.#o.store.publishedVersions(source)).some((v) => v.name === name)
    if (!ours) {
      throw new ToolgateError(
        'ERR_CONFLICT',
        `${name} is served from another source of registry "${registry}"; publish under a name of your own`,
      )
    }
  }

  async #row(source: string, name: string, version: string): Promise<PublishedVersion | undefined> {
    return (await this.#o.store.publishedVersions(source)).find(
      (v) => v.name === name && v.version === version,
    )
  }

  async #served(registry: string, name: string, version: string): Promise<ServerEntry> {
    const entry = await this.#o.store.getVersion(registry, name, version)
    if (!entry)
      throw new ToolgateError('ERR_INTERNAL', `published ${name} ${version} is not served`)
    return entry
  }
}

function officialDraft(): OfficialMeta {
  const now = new Date().toISOString()
  return {status: 'active', publishedAt: now, updatedAt: now, isLatest: true}
}

function entryOf(row: PublishedVersion): ServerEntry {
  return {
    server: JSON.parse(row.serverJson) as ServerJson,
    _meta: {
      [OFFICIAL_META_KEY]: {
        status: row.status,
        publishedAt: row.publishedAt,
        updatedAt: row.updatedAt,
        isLatest: false,
      },
    },
  }
}

/** The registry owns its official block: whatever a publisher sends there is dropped. */
function withoutOfficialMeta(server: ServerJson): ServerJson {
  const meta = server._meta
  if (!meta || !(OFFICIAL_META_KEY in meta)) return server
  const {[OFFICIAL_META_KEY]: _dropped, ...rest} = meta
  const out = {...server}
  if (Object.keys(rest).length > 0) out._meta = rest
  else delete out._meta
  return out
}

function statusOf(body: unknown): OfficialMeta['status'] {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ToolgateError('ERR_BAD_PARAMETER', 'body: must be a JSON object {"status": "…"}')
  }
  const extra = Object.keys(body).filter((k) => k !== 'status')
  if (extra.length > 0) {
    throw new ToolgateError('ERR_BAD_PARAMETER', `body: unknown field "${extra[0]!.slice(0, 64)}"`)
  }
  const status = (body as {status?: unknown}).status
  if (typeof status !== 'string' || !STATUSES.has(status)) {
    throw new ToolgateError(
      'ERR_BAD_PARAMETER',
      '/status: must be one of active, deprecated, deleted',
    )
  }
  return status as OfficialMeta['status']
}

/** Who published, as stored and audited: the token's issuer and subject. */
export function publisherOf(caller: Principal | undefined): string {
  if (!caller) return 'anonymous'
  const iss = typeof caller.claims.iss === 'string' ? caller.claims.iss : caller.provider
  return `${iss} ${caller.subject}`
}
