/**
 * wrk (Debian) as the load generator where the figures are compared with the issue's own
 * measurements: one thread, 64 connections, a Lua script that rotates over a list of paths (or
 * POSTs a fixed body). wrk is C: it leaves more of the 2 cores to the server under test than
 * autocannon does, so ratios to a baseline are closer to what the servers can do.
 */
import {execFile} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {promisify} from 'node:util'
import type {LoadResult} from './load.ts'

const run = promisify(execFile)

export interface WrkOptions {
  /** Paths to rotate over (each request takes the next); default: the URL's own path. */
  paths?: string[]
  method?: 'GET' | 'POST'
  body?: string
  headers?: Record<string, string>
  seconds?: number
  connections?: number
}

/** Whether wrk is installed (the benchmarks say so and skip its cells when it is not). */
export async function hasWrk(): Promise<boolean> {
  try {
    await run('wrk', ['--version'])
    return true
  } catch (err) {
    // wrk --version prints its banner and exits 1.
    return (
      typeof (err as {stdout?: string}).stdout === 'string' &&
      /wrk/.test(String((err as {stdout?: string}).stdout))
    )
  }
}

function script(dir: string, opts: WrkOptions): string {
  const lines: string[] = []
  if (opts.method) lines.push(`wrk.method = ${JSON.stringify(opts.method)}`)
  if (opts.body !== undefined) lines.push(`wrk.body = ${luaString(opts.body)}`)
  for (const [k, v] of Object.entries(opts.headers ?? {}))
    lines.push(`wrk.headers[${luaString(k)}] = ${luaString(v)}`)
  if (opts.paths && opts.paths.length > 0) {
    const file = join(dir, 'paths.txt')
    writeFileSync(file, opts.paths.join('\n') + '\n')
    lines.push(
      'local paths = {}',
      `for line in io.lines(${luaString(file)}) do paths[#paths + 1] = line end`,
      'local i = 0',
      'request = function()',
      '  i = i % #paths + 1',
      '  return wrk.format(nil, paths[i])',
      'end',
    )
  }
  const path = join(dir, 'script.lua')
  writeFileSync(path, lines.join('\n') + '\n')
  return path
}

/** A Lua long string cannot be escaped out of; JSON's escapes are Lua's for what we send. */
function luaString(s: string): string {
  return JSON.stringify(s)
}

const UNIT_MS: Record<string, number> = {us: 0.001, ms: 1, s: 1000, m: 60_000}

function latencyMs(text: string, label: string): number {
  const m = new RegExp(`^\\s*${label}\\s+([\\d.]+)(us|ms|s|m)\\b`, 'm').exec(text)
  return m ? Number(m[1]) * (UNIT_MS[m[2] as string] ?? NaN) : NaN
}

/** Runs a 1 s warm-up, then the measured run; parses wrk's --latency report. */
export async function wrk(url: string, opts: WrkOptions = {}): Promise<LoadResult> {
  if (!/^http:\/\/(127\.0\.0\.1|\[::1\]|localhost)[:/]/.test(url))
    throw new Error(`loopback only: ${url}`)
  const dir = mkdtempSync(join(tmpdir(), 'toolgate-wrk-'))
  try {
    const lua = script(dir, opts)
    const args = (seconds: number) => [
      '-t1',
      `-c${opts.connections ?? 64}`,
      `-d${seconds}s`,
      '--latency',
      '-s',
      lua,
      url,
    ]
    await run('wrk', args(1))
    const {stdout} = await run('wrk', args(opts.seconds ?? 4), {maxBuffer: 1 << 20})
    const requests = Number(/^\s*(\d+) requests in/m.exec(stdout)?.[1] ?? NaN)
    const socketErrors =
      /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout)
    return {
      rps: Number(/^Requests\/sec:\s+([\d.]+)/m.exec(stdout)?.[1] ?? NaN),
      p50: latencyMs(stdout, '50%'),
      p99: latencyMs(stdout, '99%'),
      mean: latencyMs(stdout, 'Latency'),
      requests,
      errors: socketErrors ? socketErrors.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
      non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(stdout)?.[1] ?? 0),
    }
  } finally {
    rmSync(dir, {recursive: true, force: true})
  }
}
