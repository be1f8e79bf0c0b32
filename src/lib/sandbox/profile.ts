import {readFileSync} from 'node:fs'
import {homedir} from 'node:os'
import {isAbsolute, resolve} from 'node:path'
import {ToolgateError} from '../errors.ts'
import {isRecord} from '../mcp/json-rpc.ts'

/**
 * Permission profiles (issue 32), in ToolHive's JSON shape so profiles move between the tools:
 *
 *   {"read": [paths], "write": [paths],
 *    "network": {"outbound": {"insecure_allow_all": bool, "allow_host": [names], "allow_port": [ports]}}}
 *
 * `write` implies read. `allow_host` entries are exact names, or `.example.com` for every
 * subdomain of example.com (not example.com itself); `allow_port` empty means any port.
 * Built-ins: `none` (no network, no host files beyond what the runtime needs) and `network`
 * (outbound allowed to anywhere).
 */
export interface PermissionProfile {
  /** The built-in's name, or the file it came from. */
  name: string
  read: string[]
  write: string[]
  network: {
    /** Outbound to anywhere, without the egress proxy (the host's network). */
    allowAll: boolean
    allowHosts: string[]
    allowPorts: number[]
  }
}

export const BUILTIN_PROFILES = ['none', 'network'] as const

export function builtinProfile(name: 'none' | 'network'): PermissionProfile {
  return {
    name,
    read: [],
    write: [],
    network: {allowAll: name === 'network', allowHosts: [], allowPorts: []},
  }
}

function invalid(where: string, message: string): ToolgateError {
  return new ToolgateError('ERR_CONFIG_INVALID', `${where}: ${message}`)
}

// A DNS name (labels of letters, digits, '-'), an IPv4 address, or a bracket-free IPv6 address;
// a leading '.' means every subdomain.
const HOST =
  /^\.?(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$|^[0-9A-Fa-f:]+:[0-9A-Fa-f:.]*$/

/** `--permission-profile none|network|FILE`; paths in a file are resolved against `cwd`. */
export function loadPermissionProfile(
  spec: string,
  cwd: string = process.cwd(),
  home: string = process.env.HOME || homedir(),
): PermissionProfile {
  if (spec === 'none' || spec === 'network') return builtinProfile(spec)
  let text: string
  try {
    text = readFileSync(spec, 'utf8')
  } catch (err) {
    throw new ToolgateError(
      'ERR_FILE_UNREADABLE',
      `--permission-profile ${spec}: not a built-in profile (none, network) and not a readable file (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    )
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw invalid(`--permission-profile ${spec}`, `not JSON (${(err as Error).message})`)
  }
  return parsePermissionProfile(value, spec, cwd, home)
}

export function parsePermissionProfile(
  value: unknown,
  name: string,
  cwd: string,
  home: string,
): PermissionProfile {
  const where = `--permission-profile ${name}`
  if (!isRecord(value)) throw invalid(where, 'must be a JSON object')
  for (const key of Object.keys(value))
    if (!['read', 'write', 'network', 'name', 'args', 'privileged'].includes(key))
      throw invalid(where, `unknown key "${key}" (known: read, write, network)`)
  if (value.privileged === true)
    throw invalid(
      where,
      '"privileged": true cannot be honoured: toolgate never runs a server privileged',
    )
  const paths = (key: 'read' | 'write'): string[] => {
    const list = value[key] ?? []
    if (!Array.isArray(list) || !list.every((p) => typeof p === 'string' && p !== ''))
      throw invalid(`${where}: ${key}`, 'must be a list of paths')
    return (list as string[]).map((p, i) => {
      if (p.includes('\0') || p.includes(':'))
        throw invalid(
          `${where}: ${key}[${i}]`,
          `"${p}" is not a plain path (":" mounts are not supported)`,
        )
      const expanded = p === '~' ? home : p.startsWith('~/') ? home + p.slice(1) : p
      return isAbsolute(expanded) ? resolve(expanded) : resolve(cwd, expanded)
    })
  }
  const network = value.network ?? {}
  if (!isRecord(network)) throw invalid(`${where}: network`, 'must be an object')
  const outbound = network.outbound ?? {}
  if (!isRecord(outbound)) throw invalid(`${where}: network.outbound`, 'must be an object')
  for (const key of Object.keys(outbound))
    if (!['insecure_allow_all', 'allow_host', 'allow_port'].includes(key))
      throw invalid(
        `${where}: network.outbound`,
        `unknown key "${key}" (known: insecure_allow_all, allow_host, allow_port)`,
      )
  const allowAll = outbound.insecure_allow_all ?? false
  if (typeof allowAll !== 'boolean')
    throw invalid(`${where}: network.outbound.insecure_allow_all`, 'must be true or false')
  const hosts = outbound.allow_host ?? []
  if (!Array.isArray(hosts))
    throw invalid(`${where}: network.outbound.allow_host`, 'must be a list')
  hosts.forEach((h, i) => {
    if (typeof h !== 'string' || !HOST.test(h))
      throw invalid(
        `${where}: network.outbound.allow_host[${i}]`,
        `${JSON.stringify(h)} is not a host name (exact, or .example.com for subdomains)`,
      )
  })
  const ports = outbound.allow_port ?? []
  if (!Array.isArray(ports))
    throw invalid(`${where}: network.outbound.allow_port`, 'must be a list')
  ports.forEach((p, i) => {
    if (!Number.isInteger(p) || (p as number) < 1 || (p as number) > 65535)
      throw invalid(
        `${where}: network.outbound.allow_port[${i}]`,
        `${JSON.stringify(p)} is not a port (1-65535)`,
      )
  })
  return {
    name,
    read: paths('read'),
    write: paths('write'),
    network: {
      allowAll,
      allowHosts: (hosts as string[]).map((h) => h.toLowerCase()),
      allowPorts: ports as number[],
    },
  }
}

/** Whether the profile lets a connection to host:port out (egress proxy rule). */
export function allowsConnection(profile: PermissionProfile, host: string, port: number): boolean {
  const {allowAll, allowHosts, allowPorts} = profile.network
  if (allowAll) return true
  if (allowPorts.length > 0 && !allowPorts.includes(port)) return false
  const h = host
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
  return allowHosts.some((rule) =>
    rule.startsWith('.') ? h.endsWith(rule) && h.length > rule.length : h === rule,
  )
}

/** The profile plus hosts a registry entry declares it needs (`--from-registry`). */
export function withHosts(
  profile: PermissionProfile,
  hosts: string[],
  ports: number[] = [],
): PermissionProfile {
  if (hosts.length === 0) return profile
  return {
    ...profile,
    name: `${profile.name}+registry`,
    network: {
      ...profile.network,
      allowHosts: [
        ...new Set([...profile.network.allowHosts, ...hosts.map((h) => h.toLowerCase())]),
      ],
      allowPorts: [...new Set([...profile.network.allowPorts, ...ports])],
    },
  }
}

/** Whether a server under this profile needs the egress proxy (some hosts allowed, not all). */
export function needsEgressProxy(profile: PermissionProfile): boolean {
  return !profile.network.allowAll && profile.network.allowHosts.length > 0
}
