import {spawn, type ChildProcess} from 'node:child_process'
import {ToolgateError} from '../errors.ts'
import {plain, port} from './provider-args.ts'
import type {TunnelHooks, TunnelProvider} from './types.ts'
import type {TunnelTarget} from './target.ts'

/**
 * A reverse tunnel through the system `ssh` client (`-R`): the SSH server listens (on its loopback
 * by default) and forwards to TARGET here. `BatchMode=yes` so it never prompts, strict host key
 * checking by default (an unknown host key is an error), `ExitOnForwardFailure` so a refused
 * forward ends ssh. When ssh exits after the tunnel was up, it is re-established with backoff; a
 * first attempt that fails is an error carrying ssh's own messages.
 */
interface SshPlan {
  argv: (target: TunnelTarget) => string[]
  bind: string
  host: string
}

const ALLOCATED = /Allocated port (\d+) for remote forward/
const FORWARDED = /remote forward success for: listen (?:[^:\s]+:)?(\d+)/

export const sshProvider: TunnelProvider = {
  name: 'ssh',
  args: {
    host: {type: 'string', required: true, check: plain},
    user: {type: 'string', check: plain},
    port: {type: 'integer', check: port(1)},
    'remote-port': {type: 'integer', check: port(0)},
    'remote-bind': {type: 'string', check: plain},
    'identity-file': {type: 'string', check: plain},
    'known-hosts-file': {type: 'string', check: plain},
    'strict-host-key-checking': {type: 'boolean'},
    'server-alive-interval': {
      type: 'integer',
      check: (v) => ((v as number) < 0 ? 'must be 0 or more' : undefined),
    },
  },
  async prepare(args): Promise<SshPlan> {
    const host = args.host as string
    // IPv4 loopback: "localhost" may bind only ::1 on the server, which many clients do not try.
    const bind = (args['remote-bind'] as string | undefined) ?? '127.0.0.1'
    const options = [
      'BatchMode=yes',
      'ExitOnForwardFailure=yes',
      // false accepts a host seen for the first time, never a changed key.
      `StrictHostKeyChecking=${args['strict-host-key-checking'] === false ? 'accept-new' : 'yes'}`,
      `ServerAliveInterval=${args['server-alive-interval'] ?? 15}`,
      'ServerAliveCountMax=3',
      ...(args['known-hosts-file'] ? [`UserKnownHostsFile=${args['known-hosts-file']}`] : []),
      ...(args['identity-file'] ? ['IdentitiesOnly=yes'] : []),
    ]
    return {
      host,
      bind,
      argv: (target) => [
        '-N',
        '-T',
        '-v', // its "remote forward success" / "Allocated port" lines say when the tunnel is up
        ...options.flatMap((o) => ['-o', o]),
        ...(args['identity-file'] ? ['-i', args['identity-file'] as string] : []),
        ...(args.port ? ['-p', String(args.port)] : []),
        '-R',
        `${bind}:${args['remote-port'] ?? 0}:${target.url.hostname}:${target.url.port || (target.url.protocol === 'https:' ? 443 : 80)}`,
        '--',
        args.user ? `${args.user}@${host}` : host,
      ],
    }
  },
  async open(target, prepared, hooks) {
    const plan = prepared as SshPlan
    const tunnel = new SshTunnel(plan, target, hooks)
    await tunnel.start()
    return tunnel
  },
}

class SshTunnel {
  private child: ChildProcess | undefined
  private stopping = false
  private attempts = 0
  private readonly plan: SshPlan
  private readonly target: TunnelTarget
  private readonly hooks: TunnelHooks

  constructor(plan: SshPlan, target: TunnelTarget, hooks: TunnelHooks) {
    this.plan = plan
    this.target = target
    this.hooks = hooks
  }

  /** The first connection: resolves once the forward is up, rejects with ssh's messages. */
  start(): Promise<void> {
    return this.connect()
  }

  async close(): Promise<void> {
    this.stopping = true
    const child = this.child
    if (!child || child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGTERM')
    const gone = new Promise((r) => child.once('exit', r))
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
    await gone
    clearTimeout(timer)
  }

  private connect(): Promise<void> {
    return new Promise((resolve, reject) => {
      const child = spawn('ssh', this.plan.argv(this.target), {stdio: ['ignore', 'ignore', 'pipe']})
      this.child = child
      const messages: string[] = [] // ssh's own (non-debug) lines, for errors
      let buffer = ''
      let up = false
      child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
        buffer += chunk
        let nl: number
        while ((nl = buffer.indexOf('\n')) !== -1) {
          const line = buffer.slice(0, nl).trimEnd()
          buffer = buffer.slice(nl + 1)
          if (!line.startsWith('debug') && line.trim()) messages.push(line)
          if (messages.length > 20) messages.shift()
          // With remote port 0 the success line says "listen …:0"; the port comes in "Allocated port".
          const m = ALLOCATED.exec(line) ?? FORWARDED.exec(line)
          if (m && m[1] !== '0' && !up) {
            up = true
            this.attempts = 0
            const url = `http://${this.plan.bind}:${m[1]}`
            this.hooks.onUrl(url, {
              sshHost: this.plan.host,
              remotePort: Number(m[1]),
              pid: child.pid,
            })
            resolve()
          }
        }
      })
      child.once('error', (err) => reject(new ToolgateError('ERR_UPSTREAM', `ssh: ${err.message}`)))
      child.once('exit', (code) => {
        if (!up) {
          const why = messages.join('\n  ') || `ssh exited with code ${code}`
          const error = new ToolgateError(
            'ERR_UPSTREAM',
            `ssh tunnel to ${this.plan.host} failed:\n  ${why}`,
          )
          if (this.attempts === 0) return reject(error)
          this.hooks.logger.warn('ssh tunnel attempt failed', {error: why.slice(0, 500)})
        } else {
          this.hooks.logger.warn('ssh tunnel closed', {code, last: messages.at(-1)})
        }
        if (!this.stopping) this.retry()
      })
    })
  }

  private retry(): void {
    this.attempts++
    const delay = Math.min(30_000, 1000 * 2 ** (this.attempts - 1))
    this.hooks.logger.info('re-establishing the ssh tunnel', {
      attempt: this.attempts,
      delayMs: delay,
    })
    setTimeout(() => {
      if (this.stopping) return
      this.connect().catch((err: Error) =>
        this.hooks.logger.warn('ssh tunnel', {error: err.message}),
      )
    }, delay).unref()
  }
}
