import {ToolgateError} from '../errors.ts'
import {isLoopbackHost} from '../http/loopback.ts'
import type {Logger} from '../log/logger.ts'
import type {ServerEntry} from '../registry/types.ts'
import {registryCredentials, type RegistryAuthFlags} from './auth.ts'
import {parseRegistryBase, RegistryClient, type ListFilters} from './client.ts'
import {clean, detailOf, tableOf} from './format.ts'

/**
 * What the `toolgate registry` commands do, between their flags and their output
 * (docs/registry-cli.md). Each opens a client with the user's credentials, does one thing and
 * closes it, whatever happened.
 */
export const OFFICIAL_REGISTRY = 'https://registry.modelcontextprotocol.io'

export interface CommonFlags extends RegistryAuthFlags {
  registry?: string
  json: boolean
}

export interface Out {
  /** One line of stdout (already JSON with --json). */
  line(text: string): void
  /** A note on stderr (hints, counts). */
  note(text: string): void
}

/** The registry to talk to: --registry or TOOLGATE_REGISTRY; for reading, the official one. */
export function registryBase(flags: {registry?: string}, required: boolean): URL {
  const base = flags.registry ?? (required ? undefined : OFFICIAL_REGISTRY)
  if (base === undefined) {
    throw new ToolgateError(
      'ERR_USAGE',
      'which registry? pass --registry https://host/registry/NAME or set TOOLGATE_REGISTRY',
    )
  }
  return parseRegistryBase(base)
}

export async function withRegistry<T>(
  flags: CommonFlags,
  required: boolean,
  logger: Logger,
  fn: (client: RegistryClient) => Promise<T>,
): Promise<T> {
  const url = registryBase(flags, required)
  const creds = await registryCredentials(flags, url.href, {
    logger,
    json: flags.json,
    explicit: flags.registry !== undefined,
  })
  if (creds.token && url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    await creds.close()
    throw new ToolgateError(
      'ERR_USAGE',
      `--registry ${url.origin}: a token goes over https only (plain http is readable on the way); loopback excepted`,
    )
  }
  const client = new RegistryClient(url.href, creds.token ? {token: creds.token} : {})
  try {
    return await fn(client)
  } finally {
    await client.close()
    await creds.close()
  }
}

export interface ListOptions {
  filters: ListFilters
  /** Undefined: every entry. */
  max: number | undefined
}

/**
 * Lists entries: JSON streams one `server` line per entry then an `end` line; the table is printed
 * at the end. When entries remain beyond `max`, a note says so and how to see them — a list that
 * stops silently at a page boundary is a bug reported against other tools.
 */
export async function listEntries(
  client: RegistryClient,
  o: ListOptions,
  json: boolean,
  out: Out,
): Promise<void> {
  const shown: ServerEntry[] = []
  const it = client.entries(o.filters, o.max)
  let count = 0
  let more: boolean
  for (;;) {
    const next = await it.next()
    if (next.done) {
      more = next.value.more
      break
    }
    count++
    // The entry's own fields first: a registry cannot pass an entry off as another event.
    if (json) out.line(JSON.stringify({...next.value, event: 'server'}))
    else shown.push(next.value)
  }
  if (json) {
    out.line(JSON.stringify({event: 'end', count, more}))
    return
  }
  if (count === 0) out.note('no servers match')
  else out.line(tableOf(shown))
  if (more) out.note(`showing the first ${count}; more match: pass --all, or --limit N`)
}

export async function showEntry(
  client: RegistryClient,
  ref: string,
  json: boolean,
  out: Out,
): Promise<void> {
  const {name, version} = parseRef(ref)
  const entry = await client.version(name, version)
  if (json) {
    out.line(JSON.stringify({...entry, event: 'server'}))
    return
  }
  const versions = await client.versions(name).catch(() => undefined)
  out.line(detailOf(entry, versions))
}

export async function publishFile(
  client: RegistryClient,
  text: string,
  where: string,
  json: boolean,
  out: Out,
): Promise<void> {
  // Checked here so a typo is reported against the file, not as the registry's 400.
  try {
    JSON.parse(text)
  } catch (err) {
    throw new ToolgateError('ERR_USAGE', `${where}: not JSON (${(err as Error).message})`)
  }
  const entry = await client.publish(text)
  if (json) out.line(JSON.stringify({...entry, event: 'published'}))
  else
    out.line(
      `published ${clean(entry.server.name, 200)} ${clean(entry.server.version, 60)} to ${client.base.href}`,
    )
}

export async function setStatus(
  client: RegistryClient,
  ref: string,
  status: string,
  json: boolean,
  out: Out,
): Promise<void> {
  const {name, version} = parseRef(ref)
  if (version === 'latest')
    throw new ToolgateError('ERR_USAGE', `name the exact version: ${name}@<version>`)
  const entry = await client.setStatus(name, version, status)
  if (json) out.line(JSON.stringify({...entry, event: 'status'}))
  else out.line(`${clean(name, 200)} ${clean(version, 60)} is now ${status}`)
}

/** `namespace/name[@version]`; the version defaults to `latest`. */
export function parseRef(ref: string): {name: string; version: string} {
  const at = ref.lastIndexOf('@')
  const name = at > 0 ? ref.slice(0, at) : ref
  const version = at > 0 ? ref.slice(at + 1) : 'latest'
  if (!/^[A-Za-z0-9.-]+\/[A-Za-z0-9._-]+$/.test(name) || version === '') {
    throw new ToolgateError(
      'ERR_USAGE',
      `"${clean(ref, 120)}" is not <namespace/name>[@version] (e.g. io.github.acme/weather@1.2.0)`,
    )
  }
  return {name, version}
}

export function filtersOf(
  flags: {
    'all-versions': boolean
    'updated-since'?: string
    transport?: string
    type?: string
    'registry-type'?: string
  },
  search?: string,
): ListFilters {
  return {
    ...(search !== undefined ? {search} : {}),
    ...(flags['all-versions'] ? {} : {version: 'latest'}),
    ...(flags['updated-since'] ? {updatedSince: flags['updated-since']} : {}),
    ...(flags.transport ? {transport: flags.transport} : {}),
    ...(flags.type ? {type: flags.type} : {}),
    ...(flags['registry-type'] ? {registryType: flags['registry-type']} : {}),
  }
}
