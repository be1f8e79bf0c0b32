/**
 * A throwaway OpenSSH server for tests (testing.md "SSH"): its own host key, one authorized client
 * key, on a free loopback port, run with `-D` so it dies with the test. `knownHosts` lists its host
 * key (what a client that checks hosts needs); `emptyKnownHosts` lists nothing (a client that
 * checks must then refuse it, as it would a man in the middle).
 */
import {execFileSync, spawn} from 'node:child_process'
import {existsSync, mkdirSync} from 'node:fs'
import {readFile, writeFile} from 'node:fs/promises'
import {connect} from 'node:net'
import {join} from 'node:path'
import {needs} from './component.ts'
import {freePort} from './mcp-upstream.ts'

export const sshdMissing = needs(
  'sshd',
  !existsSync('/usr/sbin/sshd') || !existsSync('/usr/bin/ssh') || !existsSync('/usr/bin/ssh-keygen')
    ? 'openssh-server and openssh-client (sshd, ssh, ssh-keygen)'
    : false,
)

export interface Sshd {
  port: number
  clientKey: string
  knownHosts: string
  emptyKnownHosts: string
  stop(): void
}

/** Starts sshd with its files in `dir` (which must exist and outlive it). */
export async function startSshd(dir: string): Promise<Sshd> {
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'host_key')])
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'client_key')])
  await writeFile(join(dir, 'authorized_keys'), await readFile(join(dir, 'client_key.pub')))
  const port = await freePort()
  await writeFile(
    join(dir, 'sshd_config'),
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${join(dir, 'host_key')}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      'StrictModes no',
      'UsePAM no',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PubkeyAuthentication yes',
      'PermitRootLogin prohibit-password',
      'AllowTcpForwarding yes',
      'GatewayPorts no',
    ].join('\n') + '\n',
  )
  const hostKey = (await readFile(join(dir, 'host_key.pub'), 'utf8')).trim()
  await writeFile(join(dir, 'known_hosts'), `[127.0.0.1]:${port} ${hostKey}\n`)
  await writeFile(join(dir, 'empty_known_hosts'), '')
  try {
    mkdirSync('/run/sshd', {recursive: true}) // privilege separation directory (root)
  } catch {
    // not root: sshd runs without privilege separation
  }
  const sshd = spawn('/usr/sbin/sshd', ['-D', '-e', '-f', join(dir, 'sshd_config')], {
    stdio: 'ignore',
  })
  for (let i = 0; i < 100; i++) {
    if (await canConnect(port)) break
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    port,
    clientKey: join(dir, 'client_key'),
    knownHosts: join(dir, 'known_hosts'),
    emptyKnownHosts: join(dir, 'empty_known_hosts'),
    stop: () => void sshd.kill('SIGTERM'),
  }
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({host: '127.0.0.1', port})
    s.once('connect', () => {
      s.destroy()
      resolve(true)
    })
    s.once('error', () => resolve(false))
  })
}
