import {spawn, type ChildProcess} from 'node:child_process'
import {join} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'

/**
 * The real `toolgate proxy` command (bin/dev.js) as a child process with a throwaway HOME and XDG
 * dirs, the secrets store unlocked by TOOLGATE_SECRETS_PASSWORD (as in CI) and no session bus.
 */
export interface Run {
  child: ChildProcess
  stdout: () => string
  stderr: () => string
  exited: Promise<number | null>
}

export function runProxy(args: string[], home: string, env: NodeJS.ProcessEnv = {}): Run {
  return runCli(['proxy', ...args], home, env)
}

/** Any toolgate command line (`['auth', 'token', …]`), set up like runProxy. */
export function runCli(
  argv: string[],
  home: string,
  env: NodeJS.ProcessEnv = {},
  /** Written to stdin, then closed; without it stdin is /dev/null. */
  input?: string,
): Run {
  let out = ''
  let err = ''
  const child = spawn(process.execPath, ['bin/dev.js', ...argv], {
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    cwd: process.cwd(),
    env: {
      PATH: process.env.PATH,
      HOME: home,
      XDG_CONFIG_HOME: join(home, 'config'),
      XDG_DATA_HOME: join(home, 'data'),
      XDG_STATE_HOME: join(home, 'state'),
      TOOLGATE_SECRETS_PASSWORD: 'test-password-for-the-secrets-file',
      DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent',
      ...env,
    },
  })
  // A command that exits before reading stdin closes the pipe; that EPIPE is not under test.
  child.stdin?.on('error', () => undefined)
  if (input !== undefined) child.stdin?.end(input)
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()))
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  )
  return {child, stdout: () => out, stderr: () => err, exited}
}

export async function waitFor<T>(
  what: string,
  probe: () => T | undefined,
  run: Run,
  ms = 60_000,
): Promise<T> {
  const until = Date.now() + ms
  while (Date.now() < until) {
    const v = probe()
    if (v !== undefined) return v
    if (run.child.exitCode !== null)
      throw new Error(
        `proxy exited (${run.child.exitCode}) before ${what}; stderr:\n${run.stderr()}`,
      )
    await sleep(50)
  }
  throw new Error(`timed out waiting for ${what}; stderr:\n${run.stderr()}`)
}

export async function stop(run: Run): Promise<void> {
  if (run.child.exitCode === null) run.child.kill('SIGTERM')
  const timer = setTimeout(() => run.child.kill('SIGKILL'), 15_000)
  await run.exited
  clearTimeout(timer)
}
