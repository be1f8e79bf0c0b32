/**
 * Child processes of the benchmark: the bare server and `toolgate serve` from source on the pinned
 * Node. Each prints one JSON line when listening; every process is killed by `stop()`, and the
 * benchmark stops them all on exit, even on failure.
 */
import {spawn, type ChildProcess} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))
export const NODE = join(ROOT, 'node_modules', '.bin', 'node')

export interface Proc {
  child: ChildProcess
  ready: Record<string, unknown>
  /** What the process wrote to stderr (its last 100,000 characters once it passed 1,000,000). */
  stderr(): string
  /** How many characters it has written to stderr so far: a mark for `stderrSince`. */
  stderrMark(): number
  /** What it wrote to stderr after `mark` (what is still held of it, see `stderr`). */
  stderrSince(mark: number): string
  stop(): Promise<void>
}

const live = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL')
})

export function start(
  args: string[],
  opts: {cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; command?: string} = {},
): Promise<Proc> {
  const child = spawn(opts.command ?? NODE, args, {
    cwd: opts.cwd ?? ROOT,
    env: opts.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  live.add(child)
  let stdout = ''
  let stderr = ''
  // Characters dropped from the front of `stderr`, so marks stay valid after a trim.
  let dropped = 0
  const exited = new Promise<void>((resolve) =>
    child.on('exit', () => {
      live.delete(child)
      resolve()
    }),
  )
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    const t = setTimeout(() => child.kill('SIGKILL'), 10_000)
    await exited
    clearTimeout(t)
  }
  return new Promise((resolve, reject) => {
    let done = false
    const fail = (why: string) => {
      if (done) return
      done = true
      clearTimeout(timer)
      void stop()
      reject(new Error(`${args.join(' ')}: ${why}\n${stderr.slice(-4000)}`))
    }
    const timer = setTimeout(() => fail('not listening in time'), opts.timeoutMs ?? 120_000)
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d
      if (stderr.length > 1_000_000) {
        dropped += stderr.length - 100_000
        stderr = stderr.slice(-100_000)
      }
    })
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d
      const nl = stdout.indexOf('\n')
      if (done || nl < 0) return
      try {
        const ready = JSON.parse(stdout.slice(0, nl)) as Record<string, unknown>
        done = true
        clearTimeout(timer)
        resolve({
          child,
          ready,
          stderr: () => stderr,
          stderrMark: () => dropped + stderr.length,
          stderrSince: (mark) => stderr.slice(Math.max(0, mark - dropped)),
          stop,
        })
      } catch {
        fail(`unexpected first line: ${stdout.slice(0, nl)}`)
      }
    })
    child.on('exit', (code) => fail(`exited with ${code}`))
  })
}

/** Peak resident set size (VmHWM) of a process, in MB (Linux /proc). */
export function peakRssMb(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Number(m[1]) / 1024 : NaN
}

/**
 * CPU time (user + system) a Linux process has used so far, in microseconds, from /proc/PID/stat:
 * read around a cell, it gives the CPU cost per request of the process under test.
 */
export function cpuMicros(pid: number): number {
  // Fields after the command name (which may hold spaces) start at ") "; utime and stime are the
  // 14th and 15th fields of the line, in clock ticks (100 per second on Linux).
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return (Number(fields[11]) + Number(fields[12])) * 10_000
}

/** Polls `url` until it answers 200 (e.g. /readiness), bounded. */
export async function waitFor200(url: string, timeoutMs: number): Promise<number> {
  const started = Date.now()
  for (;;) {
    try {
      const r = await fetch(url)
      await r.arrayBuffer()
      if (r.status === 200) return Date.now() - started
    } catch {
      // not up yet
    }
    if (Date.now() - started > timeoutMs) throw new Error(`${url} not 200 within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

/**
 * Polls a baseline proxy (nginx, Caddy) with a POST to `/mcp` until it answers 2xx: about 10 s,
 * or until the process exits, then throws with `failure()` (its stderr).
 */
export async function waitForProxy(
  url: string,
  body: string,
  child: {exitCode: number | null},
  failure: () => string,
): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      const r = await fetch(url + '/mcp', {method: 'POST', body})
      await r.arrayBuffer()
      if (r.ok) return
    } catch {
      // not yet
    }
    if (child.exitCode !== null || i > 100) throw new Error(failure())
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}
