import {spawn, spawnSync, type ChildProcess} from 'node:child_process'
import {existsSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {connect} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'
import {freePort} from './mcp-upstream.ts'

/**
 * A real forward proxy (Debian's tinyproxy) that alone can resolve the test's corporate host
 * names: it runs in its own mount namespace (`unshare -m`) whose /etc/hosts maps them to
 * 127.0.0.1, so a request that bypasses it cannot even find its host. Its log lists every request
 * (`CONNECT host:port`, or `GET http://…` for plain HTTP).
 */
export interface ForwardProxy {
  url: string
  port: number
  /** The requests it was asked for, in order: `CONNECT idp.corp.test:443`, `GET http://…`. */
  requests(): string[]
  log(): string
  close(): Promise<void>
}

/** Why a forward proxy cannot run here, or false when it can. */
export function forwardProxyMissing(): string | false {
  if (!existsSync('/usr/bin/tinyproxy'))
    return 'tinyproxy is not installed (apt-get install tinyproxy)'
  const probe = spawnSync('unshare', ['-m', 'true'])
  if (probe.status !== 0) return `unshare -m does not work here: ${String(probe.stderr).trim()}`
  return false
}

export async function startForwardProxy(opts: {
  hosts: string[]
  basicAuth?: {user: string; password: string}
}): Promise<ForwardProxy> {
  const dir = mkdtempSync(join(tmpdir(), 'toolgate-fwd-proxy-'))
  const port = await freePort()
  const conf = join(dir, 'tinyproxy.conf')
  const hosts = join(dir, 'hosts')
  writeFileSync(
    hosts,
    `127.0.0.1 localhost\n${opts.hosts.map((h) => `127.0.0.1 ${h}`).join('\n')}\n`,
  )
  // No ConnectPort line: CONNECT to any port (the test servers' ports are random).
  writeFileSync(
    conf,
    [
      `Port ${port}`,
      'Listen 127.0.0.1',
      'Timeout 60',
      'LogLevel Connect',
      'MaxClients 100',
      'Allow 127.0.0.1',
      'User nobody',
      'Group nogroup',
      ...(opts.basicAuth ? [`BasicAuth ${opts.basicAuth.user} ${opts.basicAuth.password}`] : []),
      '',
    ].join('\n'),
  )
  let log = ''
  const child: ChildProcess = spawn(
    'unshare',
    ['-m', 'sh', '-c', `mount --bind '${hosts}' /etc/hosts && exec tinyproxy -d -c '${conf}'`],
    {stdio: ['ignore', 'pipe', 'pipe']},
  )
  child.stdout!.on('data', (d: Buffer) => (log += d.toString()))
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()))
  const deadline = Date.now() + 10_000
  for (;;) {
    const up = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1', () => (s.end(), resolve(true)))
      s.once('error', () => resolve(false))
    })
    if (up) break
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`tinyproxy did not start: ${log}`)
    await sleep(50)
  }
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    log: () => log,
    requests: () =>
      [...log.matchAll(/Request \(file descriptor \d+\): (\S+ \S+)/g)].map((m) => m[1]!),
    async close() {
      child.kill('SIGTERM')
      if (child.exitCode === null) await new Promise((r) => child.once('exit', r))
      rmSync(dir, {recursive: true, force: true})
    },
  }
}
