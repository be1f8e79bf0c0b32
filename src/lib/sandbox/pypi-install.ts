import {execFileSync} from 'node:child_process'
import {readdirSync, readFileSync, realpathSync} from 'node:fs'
import {basename, join} from 'node:path'
import {ToolgateError} from '../errors.ts'
import {installInto} from './npm-install.ts'

/**
 * Installing outside, running inside, for PyPI (issue 32): `uvx <package>[==version|@version]
 * [args…]` given by hand or made from a registry entry is installed first — with the network,
 * wheels only (`--only-binary=:all:`: a source distribution would run its build code outside the
 * sandbox, as an npm install script would) — into a per-workload directory,
 * `$XDG_CACHE_HOME/toolgate/pypi/<workload>/` (`pip install --target`); then the package's console
 * script runs in the sandbox with the same Python, without the network it no longer needs.
 * toolgate uses the host's `python3 -m pip` (uv, which `uvx` names, is not needed).
 */

export interface UvxCommand {
  /** The requirement pip installs (`name==1.2.0`, `name`). */
  requirement: string
  /** The distribution name as given. */
  name: string
  args: string[]
}

// PEP 508 names, and a version of the characters PEP 440 versions use.
const NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/
const VERSION = /^[A-Za-z0-9][A-Za-z0-9.+!_-]*$/

/**
 * A `uvx <package>[==version|@version] [args…]` command line, or undefined when it is something
 * else (uvx options such as `--from` or `--with` are not recognised: such a command is run as
 * given, inside).
 */
export function recognizeUvx(command: string[]): UvxCommand | undefined {
  const [first, ...rest] = command
  if (!first || basename(first) !== 'uvx') return undefined
  let i = 0
  while (i < rest.length && ['-q', '--quiet'].includes(rest[i]!)) i++
  const spec = rest[i]
  if (!spec || spec.startsWith('-')) return undefined
  const parts = spec.includes('==') ? spec.split('==') : spec.split('@')
  const [name, version] = parts
  if (parts.length > 2 || !name || !NAME.test(name)) return undefined
  if (version !== undefined && !VERSION.test(version)) return undefined
  const requirement = version === undefined ? name : `${name}==${version}`
  return {requirement, name, args: rest.slice(i + 1)}
}

/** The Python that installs and runs the package: its real executable and its installation. */
export interface PythonRuntime {
  executable: string
  /** Directories the interpreter needs to read inside (its prefix and base prefix). */
  prefixes: string[]
}

/** Asks `python3` on PATH where it really lives (a pyenv shim is a script; the binary is not). */
export function findPython(env: NodeJS.ProcessEnv): PythonRuntime {
  let out: string
  try {
    out = execFileSync(
      'python3',
      ['-c', 'import json,sys; print(json.dumps([sys.executable, sys.prefix, sys.base_prefix]))'],
      {env, encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'pipe', 'ignore']},
    )
  } catch {
    throw new ToolgateError(
      'ERR_SANDBOX_UNAVAILABLE',
      '--sandbox: a PyPI package needs python3 and pip (install the python3-pip package)',
    )
  }
  const [executable, ...prefixes] = JSON.parse(out) as string[]
  return {executable: realpathSync(executable!), prefixes: [...new Set(prefixes)]}
}

/** Runs `pip install --target dir` and returns the package's console script. */
export async function installPypiPackage(
  pkg: UvxCommand,
  dir: string,
  python: PythonRuntime,
  options: {index?: string | undefined; env?: NodeJS.ProcessEnv; timeoutMs?: number} = {},
): Promise<string> {
  const args = [
    '-m',
    'pip',
    'install',
    '--target',
    dir,
    '--upgrade',
    '--only-binary=:all:',
    '--no-input',
    '--disable-pip-version-check',
    '--no-warn-script-location',
    ...(options.index ? ['--index-url', options.index] : []),
    pkg.requirement,
  ]
  await installInto(dir, `pip install ${pkg.requirement}`, python.executable, args, options)
  return consoleScriptOf(dir, pkg.name)
}

/** PEP 503: names compare lower-case with runs of `-`, `_` and `.` as one `-`. */
const normalize = (name: string) => name.toLowerCase().replace(/[-_.]+/g, '-')

/**
 * The console script a package runs as its command (`entry_points.txt`, `[console_scripts]`):
 * the one named like the package, or its only one, as uvx picks. pip wrote it to `dir/bin`.
 */
export function consoleScriptOf(dir: string, name: string): string {
  const wanted = normalize(name)
  const distInfo = readdirSync(dir).find(
    (d) => d.endsWith('.dist-info') && normalize(d.replace(/-[^-]+\.dist-info$/, '')) === wanted,
  )
  let text = ''
  try {
    if (distInfo) text = readFileSync(join(dir, distInfo, 'entry_points.txt'), 'utf8')
  } catch {
    // no entry points: reported below
  }
  const scripts: string[] = []
  let inScripts = false
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (line.startsWith('[')) inScripts = line === '[console_scripts]'
    else if (inScripts && line.includes('=')) scripts.push(line.slice(0, line.indexOf('=')).trim())
  }
  const script =
    scripts.find((s) => normalize(s) === wanted) ?? (scripts.length === 1 ? scripts[0] : undefined)
  if (!script || !NAME.test(script))
    throw new ToolgateError(
      'ERR_UPSTREAM',
      `${name} declares no command (entry_points.txt [console_scripts]) that uvx would run`,
    )
  return join(dir, 'bin', script)
}
