import {spawn, spawnSync, type ChildProcess} from 'node:child_process'
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'

/**
 * Runs the toolgate CLI (from source, on this Node) as a child process with a fresh HOME, either
 * inside a private D-Bus session with an unlocked GNOME Keyring — the real OS keyring, as on a
 * desktop (testing.md) — or with no session bus at all, as in a CI shell or a container.
 *
 * Each `bus: 'keyring'` run starts its own `dbus-run-session` and `gnome-keyring-daemon`; the keyring
 * lives in HOME, so a second run with the same HOME is a real "restart" that reads back what the
 * first stored. The daemon exits with its bus, so nothing outlives the run.
 */
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const DEV_BIN = join(REPO_ROOT, 'bin', 'dev.js')
/** The password that unlocks the test keyring itself (not the secrets store's password). */
const KEYRING_UNLOCK = 'keyring-unlock-pw'

export interface CliResult {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

export interface RunCliOptions {
  home: string
  bus: 'keyring' | 'none'
  env?: Record<string, string | undefined>
  stdin?: string
  timeoutMs?: number
}

export function keyringToolsAvailable(): boolean {
  const ok = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0
  return ok('dbus-run-session') && ok('gnome-keyring-daemon')
}

export async function freshHome(): Promise<{home: string; cleanup: () => Promise<void>}> {
  const home = await mkdtemp(join(tmpdir(), 'toolgate-secrets-'))
  return {home, cleanup: () => rm(home, {recursive: true, force: true})}
}

/** A clean environment: nothing from the test runner's keyring, XDG or TOOLGATE_* settings leaks in. */
function childEnv(home: string, extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    LANG: 'C.UTF-8',
  }
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) env[k] = v
  return env
}

export interface CliProcess {
  child: ChildProcess
  stdout(): string
  stderr(): string
  /** Resolves when stdout has matched `pattern` (rejects if the process exits first or on timeout). */
  waitForStdout(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>
  exited: Promise<CliResult>
  /** Signals the whole process group (bus, keyring daemon and CLI) and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<CliResult>
}

/** Starts the CLI and returns at once: for long-running commands such as `proxy`. */
export function spawnCli(args: string[], options: RunCliOptions): CliProcess {
  const env = childEnv(options.home, options.env)
  const [cmd, argv] =
    options.bus === 'keyring'
      ? [
          'dbus-run-session',
          [
            '--',
            'sh',
            '-c',
            // --unlock reads the keyring password on stdin; creates the login keyring on first use.
            `printf '%s' '${KEYRING_UNLOCK}' | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1; exec "$@"`,
            'sh',
            process.execPath,
            DEV_BIN,
            ...args,
          ],
        ]
      : [process.execPath, [DEV_BIN, ...args]]
  const child = spawn(cmd as string, argv as string[], {
    env,
    cwd: REPO_ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  })
  let stdout = ''
  let stderr = ''
  const listeners = new Set<() => void>()
  let done = false
  child.stdout?.setEncoding('utf8').on('data', (d: string) => {
    stdout += d
    for (const l of listeners) l()
  })
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      if (child.pid) process.kill(-child.pid, signal)
    } catch {
      // already gone
    }
  }
  const timer = setTimeout(() => killGroup('SIGKILL'), options.timeoutMs ?? 90_000)
  const exited = new Promise<CliResult>((resolve, reject) => {
    child.once('error', (err) => {
      clearTimeout(timer)
      done = true
      reject(err)
    })
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      done = true
      for (const l of listeners) l()
      resolve({code, signal, stdout, stderr})
    })
  })
  child.stdin?.on('error', () => undefined)
  child.stdin?.end(options.stdin ?? '')
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    waitForStdout(pattern, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const t = setTimeout(
          () => finish(new Error(`timed out waiting for ${pattern}; stderr: ${stderr}`)),
          timeoutMs,
        )
        const finish = (err?: Error, m?: RegExpMatchArray) => {
          clearTimeout(t)
          listeners.delete(check)
          if (err) reject(err)
          else resolve(m as RegExpMatchArray)
        }
        const check = () => {
          const m = stdout.match(pattern)
          if (m) finish(undefined, m)
          else if (done) finish(new Error(`exited before ${pattern}; stderr: ${stderr}`))
        }
        listeners.add(check)
        check()
      })
    },
    async stop(signal = 'SIGTERM') {
      killGroup(signal)
      const t = setTimeout(() => killGroup('SIGKILL'), 10_000)
      const r = await exited
      clearTimeout(t)
      return r
    },
  }
}

/** Runs the CLI to completion. */
export function runCli(args: string[], options: RunCliOptions): Promise<CliResult> {
  return spawnCli(args, options).exited
}
