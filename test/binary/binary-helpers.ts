/**
 * Helpers for the standalone-executable tests: decide whether the release can be built here, build
 * every target once per checkout state and share it between test files (a lock directory makes
 * concurrent test processes wait for one build instead of building twice), and run the binaries
 * with a clean environment.
 */
import {execFileSync, spawn, spawnSync, type ChildProcess} from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))
export const NODE = join(ROOT, 'node_modules', '.bin', 'node')
export const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2'
export const VERSION = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {version: string}
).version

/** Why the release cannot be built on this machine, or undefined when it can. */
export function seaUnsupportedReason(): string | undefined {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    return `the release tests build on linux-x64 (this is ${process.platform}-${process.arch})`
  }
  if (!existsSync(NODE)) return `the pinned Node (${NODE}) is not installed; run npm ci`
  return undefined
}

function newestMtime(path: string): number {
  const st = statSync(path)
  if (!st.isDirectory()) return st.mtimeMs
  let newest = st.mtimeMs
  for (const name of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, name)))
  return newest
}

function newestInput(): number {
  const inputs = ['src', 'scripts', 'bin', 'package.json', 'package-lock.json'].map((p) =>
    join(ROOT, p),
  )
  return Math.max(...inputs.filter((p) => existsSync(p)).map(newestMtime))
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Runs a build script; throws with its output. */
export function runBuild(args: string[]): void {
  try {
    execFileSync(NODE, args, {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 900_000,
    })
  } catch (err) {
    const e = err as {stdout?: string; stderr?: string; message: string}
    throw new Error(
      `${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`,
      {
        cause: err,
      },
    )
  }
}

const RELEASE = join(ROOT, 'build', 'test-release')

/**
 * The directory of a full `build:binaries` release (all five targets, archives, SHA256SUMS, SBOM)
 * of the current sources: reused while newer than every input, else built once while other test
 * processes wait on the lock.
 */
export async function sharedRelease(): Promise<string> {
  const lock = `${RELEASE}.lock`
  mkdirSync(join(ROOT, 'build'), {recursive: true})
  const deadline = Date.now() + 900_000
  for (;;) {
    const fresh =
      existsSync(join(RELEASE, 'SHA256SUMS')) &&
      statSync(join(RELEASE, 'SHA256SUMS')).mtimeMs > newestInput()
    if (fresh) return RELEASE
    try {
      mkdirSync(lock)
      writeFileSync(join(lock, 'pid'), String(process.pid))
      break
    } catch {
      // Another test process is building: wait for it, or take over a lock its dead owner left.
      let owner = 0
      try {
        owner = Number(readFileSync(join(lock, 'pid'), 'utf8'))
      } catch {
        // The lock was just made and has no pid yet.
      }
      if (owner && !alive(owner)) rmSync(lock, {recursive: true, force: true})
      if (Date.now() > deadline) throw new Error(`waited 15 min for the release build (${lock})`)
      await new Promise((resolve) => setTimeout(resolve, 1000))
    }
  }
  try {
    const tmp = `${RELEASE}.tmp-${process.pid}`
    runBuild([join(ROOT, 'scripts', 'build-binaries.ts'), '--out', tmp])
    rmSync(RELEASE, {recursive: true, force: true})
    renameSync(tmp, RELEASE)
    return RELEASE
  } finally {
    rmSync(lock, {recursive: true, force: true})
  }
}

/** The path of one target's bare executable in a release directory. */
export function releaseExe(dir: string, target: string): string {
  return join(dir, `toolgate-${VERSION}-${target}${target.startsWith('win') ? '.exe' : ''}`)
}

/** Whether `cmd` is on PATH. */
export function have(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0
}

export interface RunResult {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

/** Only PATH and a private HOME/XDG tree: nothing from the developer's environment leaks in. */
export function cleanEnv(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    LANG: 'C.UTF-8',
    XDG_CONFIG_HOME: join(home, 'config'),
    XDG_DATA_HOME: join(home, 'data'),
    XDG_STATE_HOME: join(home, 'state'),
    XDG_CACHE_HOME: join(home, 'cache'),
    ...extra,
  }
}

export function run(
  cmd: string,
  args: string[],
  opts: {cwd: string; env: NodeJS.ProcessEnv; stdin?: string; timeoutMs?: number},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {cwd: opts.cwd, env: opts.env, stdio: ['pipe', 'pipe', 'pipe']})
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${cmd} ${args.join(' ')} timed out\nstdout: ${stdout}\nstderr: ${stderr}`))
    }, opts.timeoutMs ?? 60_000)
    child.on('error', (err) => {
      clearTimeout(timer)
      reject(err)
    })
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      resolve({code, signal, stdout, stderr})
    })
    // A command that exits before reading its stdin (install.sh refusing its arguments at once)
    // closes the pipe: the EPIPE is not what is under test, its exit code and output are.
    child.stdin.on('error', () => undefined)
    child.stdin.end(opts.stdin ?? '')
  })
}

export interface Started {
  child: ChildProcess
  /** The first stdout line, parsed as JSON (`--json` listening event). */
  ready: Record<string, unknown>
  stderr(): string
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

/** Spawns a long-running command and resolves once it prints its first stdout line. */
export function startAndWaitForLine(
  cmd: string,
  args: string[],
  opts: {cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number},
): Promise<Started> {
  const child = spawn(cmd, args, {cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe']})
  let stdout = ''
  let stderr = ''
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const stop = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal)
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
    const code = await exited
    clearTimeout(timer)
    return code
  }
  return new Promise((resolve, reject) => {
    let settled = false
    const fail = (why: string) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      void stop('SIGKILL')
      reject(new Error(`${why}\nstdout: ${stdout}\nstderr: ${stderr}`))
    }
    const limit = opts.timeoutMs ?? 60_000
    const timer = setTimeout(() => fail(`no output line within ${limit} ms`), limit)
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d
      const nl = stdout.indexOf('\n')
      if (nl < 0 || settled) return
      let ready: Record<string, unknown>
      try {
        ready = JSON.parse(stdout.slice(0, nl)) as Record<string, unknown>
      } catch {
        return fail('first stdout line is not JSON')
      }
      settled = true
      clearTimeout(timer)
      resolve({child, ready, stderr: () => stderr, stop})
    })
    child.on('exit', (code) => fail(`exited with ${code} before printing a line`))
  })
}

/** `serve` on the example registry, anonymous, both ports chosen by the OS, JSON events. */
export const SERVE_EXAMPLE_ARGS = [
  'serve',
  '--config',
  'examples/anonymous.yaml',
  '--address',
  '127.0.0.1:0',
  '--internal-address',
  '127.0.0.1:0',
  '--json',
]
