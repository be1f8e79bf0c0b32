import {spawn} from 'node:child_process'
import {chmodSync, mkdirSync, readFileSync} from 'node:fs'
import {basename, join} from 'node:path'
import {ToolgateError} from '../errors.ts'

/**
 * Installing outside, running inside (issue 32): `npx -y <package>[@version] [args…]` given by
 * hand or made from a registry entry is installed first — with the network, scripts off
 * (`--ignore-scripts`: nothing of the package runs outside the sandbox) — into a per-workload
 * cache, `$XDG_CACHE_HOME/toolgate/npm/<workload>/`; then the package's bin runs in the sandbox
 * with Node, without the network it no longer needs.
 */

export interface NpxCommand {
  /** `name@version` as given (`@scope/name@1.2.3`, `name`). */
  spec: string
  /** The package name (`@scope/name`). */
  name: string
  args: string[]
}

/**
 * An `npx -y <package> [args…]` command line, or undefined when it is something else (other npx
 * options such as `-p`/`-c` are not recognised: such a command is run as given, inside).
 */
export function recognizeNpx(command: string[]): NpxCommand | undefined {
  const [first, ...rest] = command
  if (!first || basename(first) !== 'npx') return undefined
  let i = 0
  while (i < rest.length && ['-y', '--yes', '-q', '--quiet'].includes(rest[i]!)) i++
  const spec = rest[i]
  if (!spec || spec.startsWith('-')) return undefined
  const at = spec.lastIndexOf('@')
  const name = at > 0 ? spec.slice(0, at) : spec
  if (!/^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*$/i.test(name)) return undefined
  return {spec, name, args: rest.slice(i + 1)}
}

/** Runs `npm install` into `dir` and returns the package's bin script. */
export async function installNpmPackage(
  pkg: NpxCommand,
  dir: string,
  options: {registry?: string | undefined; env?: NodeJS.ProcessEnv; timeoutMs?: number} = {},
): Promise<string> {
  const args = [
    'install',
    '--ignore-scripts',
    '--no-audit',
    '--no-fund',
    '--no-save',
    '--no-package-lock',
    '--omit=dev',
    '--prefix',
    dir,
    ...(options.registry ? ['--registry', options.registry] : []),
    pkg.spec,
  ]
  await installInto(dir, `npm install ${pkg.spec}`, 'npm', args, options)
  return binOf(join(dir, 'node_modules', pkg.name), pkg.name)
}

/** The script a package runs as its command (package.json `bin`). */
export function binOf(packageDir: string, name: string): string {
  let manifest: {bin?: string | Record<string, string>}
  try {
    manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'))
  } catch (err) {
    throw new ToolgateError(
      'ERR_UPSTREAM',
      `${name}: installed, but its package.json cannot be read (${(err as Error).message})`,
    )
  }
  const bin = manifest.bin
  const unscoped = name.replace(/^@[^/]+\//, '')
  const script =
    typeof bin === 'string'
      ? bin
      : bin &&
        (bin[unscoped] ?? (Object.keys(bin).length === 1 ? Object.values(bin)[0] : undefined))
  if (!script)
    throw new ToolgateError(
      'ERR_UPSTREAM',
      `${name} declares no command (package.json "bin") that npx would run`,
    )
  return join(packageDir, script)
}

/**
 * Runs an installer (npm, pip: `what` names it in the error) that writes into `dir`, made first
 * and readable by the sandbox's user (uid 65534 when toolgate runs as root: packages are public).
 * A failure is an error with the last lines of the installer's output.
 */
export async function installInto(
  dir: string,
  what: string,
  command: string,
  args: string[],
  options: {env?: NodeJS.ProcessEnv; timeoutMs?: number},
): Promise<void> {
  mkdirSync(dir, {recursive: true, mode: 0o755})
  chmodSync(dir, 0o755)
  const {code, output} = await runInstaller(
    command,
    args,
    options.env ?? process.env,
    options.timeoutMs ?? 300_000,
  )
  if (code !== 0)
    throw new ToolgateError(
      'ERR_UPSTREAM',
      `${what} failed (exit ${code}) before the sandboxed start:\n${output.trim().split('\n').slice(-10).join('\n')}`,
    )
}

/** Runs an installer to its end, keeping the tail of its output for an error. */
function runInstaller(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<{code: number | null; output: string}> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {env, stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true})
    let output = ''
    const keep = (d: Buffer) => {
      output = (output + d.toString()).slice(-20_000)
    }
    child.stdout.on('data', keep)
    child.stderr.on('data', keep)
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.on('error', (err) => {
      clearTimeout(timer)
      reject(new ToolgateError('ERR_UPSTREAM', `cannot run ${command}: ${err.message}`))
    })
    child.on('exit', (code) => {
      clearTimeout(timer)
      resolve({code, output})
    })
  })
}
