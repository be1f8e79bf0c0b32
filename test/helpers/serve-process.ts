/**
 * Runs `toolgate serve` as a child process from source (bin/dev.js on the pinned Node), with its
 * own temporary XDG directories, and waits for the listening line it prints on stdout. Every
 * process started here is killed by `stop()`; pair each start with `t.after(() => s.stop())`.
 */
import {spawn, type ChildProcess} from 'node:child_process'
import {request as httpRequest, type IncomingHttpHeaders} from 'node:http'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
export const NODE = join(ROOT, 'node_modules', '.bin', 'node')
export const DEV = join(ROOT, 'bin', 'dev.js')
export const FIXTURES = join(ROOT, 'test', 'fixtures', 'serve')

export interface ServeProcess {
  url: string
  internalUrl: string
  proc: ChildProcess
  dir: string
  stdout(): string
  stderr(): string
  /** Sends `signal` (default SIGTERM) and resolves with the exit code; removes the temp dir. */
  stop(signal?: NodeJS.Signals): Promise<number | null>
  exited: Promise<number | null>
}

export interface RunResult {
  code: number | null
  stdout: string
  stderr: string
}

export function tempDir(prefix = 'tg-serve-'): string {
  return mkdtempSync(join(tmpdir(), prefix))
}

/** Writes `text` as `name` into a fresh temp dir and returns its path. */
export function writeConfig(dir: string, name: string, text: string): string {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}

function envFor(dir: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: dir,
    XDG_CONFIG_HOME: join(dir, 'config'),
    XDG_DATA_HOME: join(dir, 'data'),
    XDG_STATE_HOME: join(dir, 'state'),
    ...extra,
  }
}

/** `bin/dev.js serve …` in a temp XDG home, on port-0 addresses unless the args give others. */
function spawnServe(args: string[], dir: string, env: NodeJS.ProcessEnv | undefined) {
  const full = ['serve', ...args]
  if (!args.includes('--address')) full.push('--address', '127.0.0.1:0')
  if (!args.includes('--internal-address')) full.push('--internal-address', '127.0.0.1:0')
  return spawn(NODE, [DEV, ...full], {
    cwd: ROOT,
    env: envFor(dir, env),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
}

/** Starts serve with port-0 addresses unless the args give others; rejects with stderr if it exits first. */
export async function startServe(
  args: string[],
  opts: {dir?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number} = {},
): Promise<ServeProcess> {
  const dir = opts.dir ?? tempDir()
  const proc = spawnServe(args, dir, opts.env)
  let out = ''
  let err = ''
  proc.stdout.setEncoding('utf8').on('data', (d: string) => (out += d))
  proc.stderr.setEncoding('utf8').on('data', (d: string) => (err += d))
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)))
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal)
    const killer = setTimeout(() => proc.kill('SIGKILL'), 20_000)
    const code = await exited
    clearTimeout(killer)
    if (!opts.dir) rmSync(dir, {recursive: true, force: true})
    return code
  }
  try {
    const line = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(new Error(`serve did not start within ${opts.timeoutMs ?? 60_000} ms\n${err}`)),
        opts.timeoutMs ?? 60_000,
      )
      const onData = () => {
        const nl = out.indexOf('\n')
        if (nl !== -1) {
          clearTimeout(timer)
          proc.stdout!.off('data', onData)
          resolve(out.slice(0, nl))
        }
      }
      proc.stdout!.on('data', onData)
      void exited.then((code) => {
        clearTimeout(timer)
        reject(new Error(`serve exited with ${code} before listening\n${err}`))
      })
    })
    const m = args.includes('--json')
      ? (() => {
          const j = JSON.parse(line) as {url: string; internalUrl: string}
          return [line, j.url, j.internalUrl]
        })()
      : /^toolgate serve listening on (http:\/\/\S+) \(bound to [^)]*\); internal (http:\/\/\S+) \(bound to [^)]*\)$/.exec(
          line,
        )
    if (!m) throw new Error(`unexpected listening line: ${line}`)
    return {
      url: m[1] as string,
      internalUrl: m[2] as string,
      proc,
      dir,
      stdout: () => out,
      stderr: () => err,
      stop,
      exited,
    }
  } catch (e) {
    await stop('SIGKILL')
    throw e
  }
}

/** Runs serve expecting it to exit (a config error); kills it after `timeoutMs` if it does not. */
export async function runServe(
  args: string[],
  opts: {dir?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number} = {},
): Promise<RunResult> {
  const dir = opts.dir ?? tempDir()
  const proc = spawnServe(args, dir, opts.env)
  let stdout = ''
  let stderr = ''
  proc.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
  proc.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  const timer = setTimeout(() => proc.kill('SIGKILL'), opts.timeoutMs ?? 60_000)
  const code = await new Promise<number | null>((resolve) => proc.once('exit', (c) => resolve(c)))
  clearTimeout(timer)
  if (!opts.dir) rmSync(dir, {recursive: true, force: true})
  return {code, stdout, stderr}
}

export async function getJson(
  url: string,
  init?: RequestInit,
): Promise<{status: number; headers: Headers; body: unknown; text: string}> {
  const res = await fetch(url, {...init, signal: AbortSignal.timeout(30_000)})
  const text = await res.text()
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    body = undefined
  }
  return {status: res.status, headers: res.headers, body, text}
}

/**
 * GET with the path sent byte for byte (node:http does not normalise it; `fetch` would resolve
 * `%2e%2e` segments per the WHATWG URL rules before sending).
 */
export function rawRequest(
  base: string,
  path: string,
  opts: {method?: string; headers?: Record<string, string>} = {},
): Promise<{status: number; headers: IncomingHttpHeaders; text: string; body: unknown}> {
  const u = new URL(base)
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: u.hostname,
        port: u.port,
        path,
        method: opts.method ?? 'GET',
        headers: opts.headers,
        timeout: 30_000,
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (d: string) => (text += d))
        res.on('end', () => {
          let body: unknown
          try {
            body = JSON.parse(text)
          } catch {
            body = undefined
          }
          resolve({status: res.statusCode ?? 0, headers: res.headers, text, body})
        })
        res.on('error', reject)
      },
    )
    req.on('timeout', () => req.destroy(new Error('request timed out')))
    req.on('error', reject)
    req.end()
  })
}
