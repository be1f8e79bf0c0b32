/**
 * Helpers for the standalone-executable test: decide whether a SEA can be built here, reuse
 * build/toolgate when it is newer than every input, else build a private copy into a temp dir (so
 * concurrent test runs never write the same file), and run the binary with a clean environment.
 */
import {execFileSync, spawn, type ChildProcess} from 'node:child_process'
import {existsSync, readdirSync, readFileSync, statSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))
export const NODE = join(ROOT, 'node_modules', '.bin', 'node')
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2'

/** Why a single executable cannot be built on this machine, or undefined when it can. */
export function seaUnsupportedReason(): string | undefined {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    return `the standalone build targets linux-x64 only (this is ${process.platform}-${process.arch})`
  }
  if (!existsSync(NODE)) return `the pinned Node (${NODE}) is not installed; run npm ci`
  // Only a Node binary carrying the SEA fuse can become a single executable.
  if (!readFileSync(NODE).includes(SEA_FUSE))
    return `${NODE} has no SEA fuse (not an official Node build)`
  return undefined
}

function newestMtime(path: string): number {
  const st = statSync(path)
  if (!st.isDirectory()) return st.mtimeMs
  let newest = st.mtimeMs
  for (const name of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, name)))
  return newest
}

/** build/toolgate when it is newer than src/, scripts/, bin/ and the package files. */
export function freshPrebuiltBinary(): string | undefined {
  const bin = join(ROOT, 'build', 'toolgate')
  if (!existsSync(bin)) return undefined
  const inputs = ['src', 'scripts', 'bin', 'package.json', 'package-lock.json'].map((p) =>
    join(ROOT, p),
  )
  const newestInput = Math.max(...inputs.filter((p) => existsSync(p)).map(newestMtime))
  return statSync(bin).mtimeMs > newestInput ? bin : undefined
}

/** Builds the executable into `dir` with the project's own build script; throws with its output. */
export function buildBinary(dir: string): string {
  const out = join(dir, 'toolgate')
  try {
    execFileSync(NODE, [join(ROOT, 'scripts', 'build-binary.ts'), '--out', out], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 280_000,
    })
  } catch (err) {
    const e = err as {stdout?: string; stderr?: string; message: string}
    throw new Error(`build-binary failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`, {
      cause: err,
    })
  }
  return out
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
