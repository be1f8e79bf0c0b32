import type {ChildProcess} from 'node:child_process'
import {realpathSync, statSync} from 'node:fs'
import {delimiter, dirname, isAbsolute, join, resolve} from 'node:path'
import {xdgDirs} from '../config/xdg.ts'
import {ToolgateError} from '../errors.ts'
import type {Logger} from '../log/logger.ts'
import {bwrapCommand, findBwrap} from './bwrap.ts'
import {isSingleExecutable} from '../cli/self.ts'
import {findOnPath} from '../fs/path-lookup.ts'
import {acceptEgressListener} from './egress-channel.ts'
import {startEgressProxy, type EgressProxy} from './egress-proxy.ts'
import {SANDBOX_INIT_FLAG} from './init-flag.ts'
import {SANDBOX_ENV_PREFIX, SANDBOX_INIT_SOURCE} from './init-source.ts'
import {installNpmPackage, recognizeNpx} from './npm-install.ts'
import {findPython, installPypiPackage, recognizeUvx} from './pypi-install.ts'
import {needsEgressProxy, withHosts, type PermissionProfile} from './profile.ts'
import {seatbeltProfile} from './seatbelt.ts'

/**
 * `run --sandbox` (issue 32): turns a server command into the same command confined by the
 * OS — bubblewrap on Linux (bwrap.ts), sandbox-exec on macOS (seatbelt.ts); Windows is refused.
 * An `npx -y <package>` or `uvx <package>` command is installed outside first and run inside
 * without network (npm-install.ts, pypi-install.ts); a profile that allows some hosts gets the
 * egress proxy (egress-proxy.ts).
 * Nothing ever runs unconfined because a sandbox tool is missing: that is an error naming it.
 */

export interface SandboxRequest {
  workload: string
  profile: PermissionProfile
  /** The npm registry a registry entry names for its package (`registryBaseUrl`). */
  npmRegistry?: string | undefined
  /** The PyPI index (PEP 503 `…/simple/`) a registry entry names for its package. */
  pypiIndex?: string | undefined
}

export interface PreparedSandbox {
  /** What to start instead of the server command. */
  command: string[]
  env: NodeJS.ProcessEnv
  /** The profile in force (shown by `list`). */
  profile: PermissionProfile
  /**
   * When set, the command must be started with an IPC channel (stdio 'ipc') and its child
   * process handed here: the sandbox's init sends its egress listener over it (egress-channel.ts).
   */
  channel?: ((child: ChildProcess) => void) | undefined
  close(): Promise<void>
}

/** The unprivileged user a server runs as when toolgate runs as root (nobody/nogroup). */
export const SANDBOX_UID = 65534
/** The egress proxy's port on the sandbox's own loopback (its own network namespace). */
export const EGRESS_PORT_INSIDE = 3128
const NPM_REGISTRY = 'https://registry.npmjs.org/'
const PYPI_HOSTS = ['pypi.org', 'files.pythonhosted.org']

export interface SandboxDeps {
  logger: Logger
  /** Each decision of the egress proxy (counted on /metrics). */
  onEgress?: (decision: 'allow' | 'deny') => void
  env?: NodeJS.ProcessEnv
  cwd?: string
  platform?: NodeJS.Platform
}

export async function prepareSandbox(
  command: string[],
  serverEnv: NodeJS.ProcessEnv,
  request: SandboxRequest,
  deps: SandboxDeps,
): Promise<PreparedSandbox> {
  const platform = deps.platform ?? process.platform
  const env = deps.env ?? process.env
  const cwd = deps.cwd ?? process.cwd()
  if (platform === 'win32')
    throw new ToolgateError(
      'ERR_SANDBOX_UNAVAILABLE',
      '--sandbox: not available on Windows (toolgate has no sandbox there yet, and never runs a server unconfined when one is asked for); run without --sandbox, or on Linux or macOS',
    )
  const bwrap = platform === 'linux' ? findBwrap(env) : undefined
  const dropTo = platform === 'linux' && process.getuid?.() === 0 ? SANDBOX_UID : undefined
  if (dropTo !== undefined) onPath('setpriv', env, 'util-linux')

  let profile = request.profile
  const extraRead: string[] = []
  let server = [...command]
  let pythonPath: string | undefined
  const home = env.HOME || xdgDirs(env).config
  const node = nodeRuntime(env)
  extraRead.push(node)
  const pkg = recognizeNpx(command)
  const pyPkg = pkg ? undefined : recognizeUvx(command)
  if (pyPkg) {
    const python = findPython(env)
    const dir = join(xdgDirs(env).cache, 'pypi', request.workload)
    deps.logger.info('installing the package outside the sandbox', {
      package: pyPkg.requirement,
      dir,
    })
    const script = await installPypiPackage(pyPkg, dir, python, {index: request.pypiIndex, env})
    extraRead.push(dir, ...python.prefixes)
    server = [python.executable, script, ...pyPkg.args]
    pythonPath = dir
  } else if (pkg) {
    const dir = join(xdgDirs(env).cache, 'npm', request.workload)
    deps.logger.info('installing the package outside the sandbox', {package: pkg.spec, dir})
    const bin = await installNpmPackage(pkg, dir, {registry: request.npmRegistry, env})
    extraRead.push(dir)
    server = [node, bin, ...pkg.args]
  } else if (command[0] && /(^|\/)uvx$/.test(command[0])) {
    // A uvx line we cannot split: uvx installs inside, so PyPI must be reachable.
    profile = withHosts(profile, PYPI_HOSTS, [443])
    deps.logger.warn('uvx runs inside the sandbox with PyPI allowed', {hosts: PYPI_HOSTS})
  } else if (command[0] && /(^|\/)npx$/.test(command[0])) {
    // An npx line we cannot split: npx installs inside, so its registry must be reachable.
    const registry = new URL(env.npm_config_registry || request.npmRegistry || NPM_REGISTRY)
    profile = withHosts(profile, [registry.hostname], [Number(registry.port || 443)])
    deps.logger.warn('npx runs inside the sandbox with its registry allowed', {
      host: registry.hostname,
    })
  }
  const executable = resolveExecutable(server[0]!, env, cwd)
  extraRead.push(executable)
  // Files and directories named on the command line (a script, a config) are readable.
  for (const arg of server.slice(1)) {
    const p = isAbsolute(arg) ? arg : resolve(cwd, arg)
    if (arg !== '' && !arg.startsWith('-') && exists(p)) extraRead.push(realpathSync(p))
  }
  const dirs = xdgDirs(env)
  const hidden = [dirs.config, dirs.data, dirs.state, join(home, '.local', 'share', 'keyrings')]

  let egress: EgressProxy | undefined
  const sandboxEnv: NodeJS.ProcessEnv = {...serverEnv, HOME: home}
  // `#!/usr/bin/env node` scripts find the same Node inside.
  sandboxEnv.PATH = [dirname(node), serverEnv.PATH ?? env.PATH ?? '/usr/bin:/bin'].join(delimiter)
  if (pythonPath) {
    // The installed package and nothing of the user's: the directory is read-only inside.
    sandboxEnv.PYTHONPATH = pythonPath
    sandboxEnv.PYTHONNOUSERSITE = '1'
    sandboxEnv.PYTHONDONTWRITEBYTECODE = '1'
  }
  // Inside bubblewrap the egress proxy's port is the sandbox's own loopback; macOS has no network
  // namespace, so there it is a port of this machine's loopback, the only one the profile allows.
  let egressPort = EGRESS_PORT_INSIDE
  if (needsEgressProxy(profile)) {
    egress = startEgressProxy(profile, deps.logger, deps.onEgress)
    if (platform === 'darwin') egressPort = (await egress.serve({host: '127.0.0.1', port: 0})).port
    const proxyUrl = `http://127.0.0.1:${egressPort}`
    for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy'])
      sandboxEnv[name] = proxyUrl
    // Everything goes through the proxy, loopback included: inside, loopback is the sandbox's own.
    sandboxEnv.NO_PROXY = ''
    sandboxEnv.no_proxy = ''
    // Node's own http and fetch honour the variables only when asked to (Node ≥ 22.18 / 24.5).
    sandboxEnv.NODE_USE_ENV_PROXY = '1'
  }
  const close = async () => {
    await egress?.close()
  }

  try {
    if (platform === 'darwin') {
      const text = seatbeltProfile({
        profile,
        extraRead,
        tmpDir: join('/private/tmp', `toolgate-${request.workload}`),
        hidden,
        egressPort: egress ? egressPort : undefined,
      })
      return {command: ['sandbox-exec', '-p', text, ...server], env: sandboxEnv, profile, close}
    }
    const wrapped = bwrapCommand(bwrap!, {
      profile,
      command: executable,
      args: server.slice(1),
      cwd,
      home,
      extraRead,
      hidden,
      init: initProgram(),
      egressPort: egress ? EGRESS_PORT_INSIDE : undefined,
      dropTo: dropTo !== undefined ? {uid: dropTo, gid: dropTo} : undefined,
    })
    const proxy = egress
    return {
      command: [wrapped.command, ...wrapped.args],
      env: shelterLoaderEnv(sandboxEnv),
      profile,
      close,
      channel: proxy && ((child) => acceptEgressListener(child, proxy, deps.logger)),
    }
  } catch (err) {
    await close()
    throw err
  }
}

/**
 * The server's NODE_OPTIONS and LD_* variables, renamed (SANDBOX_ENV_PREFIX) for the init to
 * restore for the server: bwrap and setpriv (which run outside the sandbox, with the user's
 * rights) and the init (which holds the channel to toolgate) must load nothing a variable names —
 * a preload in a `write` path, put there by an earlier run of the server, would run in them.
 */
export function shelterLoaderEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {}
  for (const [name, value] of Object.entries(env)) {
    if (name.startsWith(SANDBOX_ENV_PREFIX)) continue
    const loader = name === 'NODE_OPTIONS' || name.startsWith('LD_')
    out[loader ? SANDBOX_ENV_PREFIX + name : name] = value
  }
  return out
}

/** How the init runs inside: this Node with the source, or the standalone executable's mode. */
function initProgram(): {command: string; args: string[]} {
  if (isSingleExecutable()) return {command: process.execPath, args: [SANDBOX_INIT_FLAG]}
  return {
    command: realpathSync(process.execPath),
    args: ['-e', `(${SANDBOX_INIT_SOURCE})(process.argv.slice(1))`, '--'],
  }
}

/** The Node that runs `node` and `#!/usr/bin/env node` servers inside: this one, or PATH's. */
function nodeRuntime(env: NodeJS.ProcessEnv): string {
  if (!isSingleExecutable()) return realpathSync(process.execPath)
  return realpathSync(onPath('node', env, 'nodejs'))
}

function resolveExecutable(command: string, env: NodeJS.ProcessEnv, cwd: string): string {
  if (command.includes('/'))
    return realpathSync(isAbsolute(command) ? command : resolve(cwd, command))
  return realpathSync(onPath(command, env))
}

function onPath(name: string, env: NodeJS.ProcessEnv, pkg?: string): string {
  const found = findOnPath(name, env)
  if (found) return found
  throw new ToolgateError(
    'ERR_SANDBOX_UNAVAILABLE',
    `--sandbox: "${name}" is not on PATH${pkg ? ` (install the ${pkg} package)` : ''}`,
  )
}

function exists(p: string): boolean {
  try {
    statSync(p)
    return true
  } catch {
    return false
  }
}
