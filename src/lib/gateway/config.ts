import {dirname, isAbsolute, resolve} from 'node:path'
import {Checker, type Obj} from '../config/checker.ts'
import {parseConfigText, readConfigText} from '../config/serve-config.ts'
import {ToolgateError} from '../errors.ts'
import {validateWorkloadName} from '../workloads/state.ts'
import {compileToolShaping, type ToolShaping} from './shaping.ts'

/**
 * What a gateway is made of (issue 37): its backends — local workloads followed by name, or remote
 * URLs — each with a prefix, optional tool shaping and, for a URL, its own outgoing auth. Backends
 * come from `--backend` flags and from the `backends` section of `--config` (YAML or JSON); a flag
 * naming a backend the file describes takes the file's section.
 *
 * ```yaml
 * pageSize: 500
 * backends:
 *   everything:                 # the backend's name: Cedar's resource.backend, logs
 *     workload: everything      # default: the name itself (when there is no url)
 *     prefix: ev                # default: the name
 *     tools:
 *       allow: ["echo", "get-*"]
 *       deny: ["*delete*"]
 *       override:
 *         echo: {name: say, description: Says it back}
 *   github:
 *     url: https://mcp.example.com/mcp
 *     transport: streamable-http   # or sse
 *     auth:                        # the outgoing-auth flags of `toolgate proxy`, by name
 *       remote-auth-bearer-token-file: ./github.token
 * ```
 */

export interface BackendConfig {
  /** Unique; the value of `resource.backend` in Cedar. */
  name: string
  /** Unique; exposed names are `<prefix>__<name>`, URIs `<prefix>+<uri>`. */
  prefix: string
  /** A local workload, followed across restarts (its state file says where it listens). */
  workload?: string
  url?: string
  transport: 'streamable-http' | 'sse'
  /** Outgoing auth of a URL backend: pipeline flag names → values (relative paths resolved). */
  auth: Record<string, string | string[]>
  tools: ToolShaping
}

export interface GatewayConfig {
  backends: BackendConfig[]
  /** Items per page of a merged list. */
  pageSize: number
}

/** Letters, digits and '-': no '_' or '+', so `<prefix>__` and `<prefix>+` split unambiguously. */
const PREFIX = /^[A-Za-z0-9][A-Za-z0-9-]{0,39}$/
const NAME = PREFIX
export const DEFAULT_PAGE_SIZE = 1000
const MAX_BACKENDS = 64

// The outgoing credentials a URL backend may set, named as `toolgate proxy`'s flags: a bearer
// token from a file, and headers (literal or from the secrets store). Token exchange and the
// browser login need the caller's token or a terminal, which a gateway's backends do not have.
const AUTH_STRINGS = ['remote-auth-bearer-token-file'] as const
const AUTH_LISTS = ['remote-forward-headers', 'remote-forward-headers-secret'] as const
const AUTH_FILES = new Set(['remote-auth-bearer-token-file'])
const AUTH_KEYS: readonly string[] = [...AUTH_STRINGS, ...AUTH_LISTS]

/** One `--backend` value: `WORKLOAD`, `WORKLOAD=PREFIX` or `URL=PREFIX`. */
export interface BackendFlag {
  name: string
  prefix?: string
  workload?: string
  url?: string
}

export function parseBackendFlag(value: string): BackendFlag {
  const bad = (why: string) =>
    new ToolgateError('ERR_USAGE', `--backend "${value.slice(0, 120)}": ${why}`)
  if (value.includes('://')) {
    // The prefix is after the last '=', and always given.
    const at = value.lastIndexOf('=')
    if (at === -1) throw bad('a URL backend needs a prefix: --backend https://host/mcp=PREFIX')
    const url = value.slice(0, at)
    const prefix = value.slice(at + 1)
    // `https://h/mcp?a=b` would split as URL `…?a` with prefix `b`; a query (often a key) is
    // also readable by every user in the process list. The config file takes it.
    if (url.includes('?'))
      throw bad(
        'a URL with a query goes in the config file (backends.NAME.url), not on the command line',
      )
    checkUrl(url, (why) => bad(why))
    if (!PREFIX.test(prefix)) throw bad(prefixRule(prefix))
    return {name: prefix, prefix, url}
  }
  const at = value.indexOf('=')
  const workload = at === -1 ? value : value.slice(0, at)
  try {
    validateWorkloadName(workload)
  } catch (err) {
    throw bad((err as Error).message)
  }
  if (at === -1) return {name: workload, workload}
  const prefix = value.slice(at + 1)
  if (!PREFIX.test(prefix)) throw bad(prefixRule(prefix))
  return {name: workload, prefix, workload}
}

function prefixRule(prefix: string): string {
  return `prefix "${prefix.slice(0, 60)}" must be 1-40 letters, digits or '-' (no '_' or '+': they separate the prefix from a name)`
}

function checkUrl(url: string, fail: (why: string) => Error): void {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    throw fail(`"${url.slice(0, 100)}" is not a URL`)
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw fail('the URL must be http(s)')
  if (u.username || u.password)
    throw fail('credentials in the URL would be logged; use the backend auth section instead')
}

/** Reads `--config` (when given) and merges the `--backend` flags into one validated config. */
export function loadGatewayConfig(flags: string[], configFile: string | undefined): GatewayConfig {
  let doc: unknown = {}
  let baseDir = process.cwd()
  let where = 'gateway configuration'
  if (configFile !== undefined) {
    const abs = resolve(configFile)
    doc = parseConfigText(readConfigText(abs, 'gateway config'), abs) ?? {}
    baseDir = dirname(abs)
    where = `gateway config ${abs}`
  }
  return validateGatewayConfig(doc, flags.map(parseBackendFlag), {baseDir, where})
}

export function validateGatewayConfig(
  doc: unknown,
  flagged: BackendFlag[],
  options: {baseDir: string; where: string},
): GatewayConfig {
  const c = new Checker()
  const root = c.object(doc, '', ['backends', 'pageSize']) ?? {}
  let pageSize = DEFAULT_PAGE_SIZE
  if (root.pageSize !== undefined) {
    if (!Number.isInteger(root.pageSize) || (root.pageSize as number) < 1)
      c.add('pageSize', 'must be a whole number of at least 1')
    else pageSize = Math.min(root.pageSize as number, 100_000)
  }
  const sections = new Map<string, Obj>()
  if (root.backends !== undefined) {
    const obj = c.object(root.backends, 'backends', Object.keys(root.backends ?? {})) ?? {}
    for (const [name, section] of Object.entries(obj)) {
      if (!NAME.test(name)) c.add(`backends.${name}`, `backend name: ${prefixRule(name)}`)
      const s = c.object(section ?? {}, `backends.${name}`, [
        'workload',
        'url',
        'prefix',
        'transport',
        'auth',
        'tools',
      ])
      if (s) sections.set(name, s)
    }
  }
  // Flags first, in their order, then the file's other backends in its order.
  const order: BackendFlag[] = [...flagged]
  for (const name of sections.keys()) if (!flagged.some((f) => f.name === name)) order.push({name})
  const seen = new Set<string>()
  const backends: BackendConfig[] = []
  for (const flag of order) {
    if (seen.has(flag.name)) {
      c.add(`backends.${flag.name}`, 'given twice; each backend needs its own name')
      continue
    }
    seen.add(flag.name)
    const b = backendFrom(c, flag, sections.get(flag.name), options.baseDir)
    if (b) backends.push(b)
  }
  if (backends.length === 0 && c.problems.length === 0)
    c.add('backends', 'no backend: give --backend WORKLOAD|URL=PREFIX or a backends section')
  if (backends.length > MAX_BACKENDS) c.add('backends', `at most ${MAX_BACKENDS} backends`)
  const prefixes = new Map<string, string>()
  for (const b of backends) {
    const other = prefixes.get(b.prefix.toLowerCase())
    if (other)
      c.add(
        `backends.${b.name}.prefix`,
        `"${b.prefix}" is also the prefix of ${other}; prefixes must differ (case aside)`,
      )
    prefixes.set(b.prefix.toLowerCase(), b.name)
  }
  if (c.problems.length > 0) {
    const lines = c.problems.map((p) => `  ${p.path}: ${p.message}`).join('\n')
    throw new ToolgateError('ERR_CONFIG_INVALID', `${options.where} is invalid:\n${lines}`, {
      details: {problems: c.problems},
    })
  }
  return {backends, pageSize}
}

function backendFrom(
  c: Checker,
  flag: BackendFlag,
  section: Obj | undefined,
  baseDir: string,
): BackendConfig | undefined {
  const path = `backends.${flag.name}`
  const s = section ?? {}
  const url = flag.url ?? c.string(s.url, `${path}.url`, {nonEmpty: true})
  let workload = c.string(s.workload, `${path}.workload`, {nonEmpty: true})
  if (flag.url && s.url !== undefined && s.url !== flag.url)
    c.add(`${path}.url`, `differs from --backend ${flag.url}`)
  if (flag.workload && workload !== undefined && workload !== flag.workload)
    c.add(`${path}.workload`, `differs from --backend ${flag.workload}`)
  if (url !== undefined && workload !== undefined) c.add(path, 'give url or workload, not both')
  if (url !== undefined) {
    try {
      checkUrl(url, (why) => new Error(why))
    } catch (err) {
      c.add(`${path}.url`, (err as Error).message)
    }
  } else {
    workload ??= flag.workload ?? flag.name
    try {
      validateWorkloadName(workload)
    } catch (err) {
      c.add(`${path}.workload`, (err as Error).message)
    }
  }
  const prefix = c.string(s.prefix, `${path}.prefix`) ?? flag.prefix ?? flag.name
  if (flag.prefix && s.prefix !== undefined && s.prefix !== flag.prefix)
    c.add(`${path}.prefix`, `differs from --backend …=${flag.prefix}`)
  if (!PREFIX.test(prefix)) c.add(`${path}.prefix`, prefixRule(prefix))
  const transport = c.string(s.transport, `${path}.transport`) ?? 'streamable-http'
  if (transport !== 'streamable-http' && transport !== 'sse')
    c.add(`${path}.transport`, 'must be streamable-http or sse')
  if (s.transport !== undefined && url === undefined)
    c.add(`${path}.transport`, "a workload's transport is its own; only for url backends")
  const auth = checkAuth(c, s.auth, `${path}.auth`, baseDir)
  if (s.auth !== undefined && url === undefined)
    c.add(
      `${path}.auth`,
      'only for url backends (a local workload is reached on loopback, through its own front)',
    )
  const tools = compileToolShaping(c, s.tools, `${path}.tools`)
  return {
    name: flag.name,
    prefix,
    ...(url !== undefined ? {url} : {workload: workload as string}),
    transport: transport as BackendConfig['transport'],
    auth,
    tools,
  }
}

function checkAuth(
  c: Checker,
  value: unknown,
  path: string,
  baseDir: string,
): BackendConfig['auth'] {
  if (value === undefined) return {}
  const obj = c.object(value, path, AUTH_KEYS) ?? {}
  const out: BackendConfig['auth'] = {}
  for (const [key, v] of Object.entries(obj)) {
    if ((AUTH_LISTS as readonly string[]).includes(key)) {
      const list = c.stringList(v, `${path}.${key}`)
      if (list) out[key] = list
    } else {
      const s = c.string(v, `${path}.${key}`, {nonEmpty: true})
      if (s !== undefined)
        out[key] = AUTH_FILES.has(key) && !isAbsolute(s) ? resolve(baseDir, s) : s
    }
  }
  return out
}

/**
 * Workload backends that are not running now: they join by themselves when they start (the
 * gateway follows them by name), but a misspelt name would otherwise go unnoticed.
 */
export async function absentWorkloads(config: GatewayConfig): Promise<string[]> {
  const {findRunningWorkload} = await import('../workloads/state.ts')
  const absent: string[] = []
  for (const b of config.backends)
    if (
      b.workload !== undefined &&
      !(await findRunningWorkload(b.workload).then(
        () => true,
        () => false,
      ))
    )
      absent.push(b.workload)
  return absent
}
