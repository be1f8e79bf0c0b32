/**
 * Caddy (Debian) as a second reverse proxy baseline, limited to one core (GOMAXPROCS=1) like the
 * one nginx worker and the one Node thread it is compared with. Undefined when caddy is missing.
 */
import {spawn} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {freePort} from './nginx.ts'
import {waitForProxy} from './processes.ts'

export async function startCaddy(
  upstreamPort: number,
  probeBody: string,
): Promise<{url: string; pid: number; stop: () => Promise<void>} | undefined> {
  const dir = mkdtempSync(join(tmpdir(), 'tg-bench-caddy-'))
  const port = await freePort()
  const config = join(dir, 'Caddyfile')
  writeFileSync(
    config,
    `{
  admin off
  auto_https off
}
http://127.0.0.1:${port} {
  reverse_proxy 127.0.0.1:${upstreamPort}
}
`,
  )
  const child = spawn('caddy', ['run', '--config', config, '--adapter', 'caddyfile'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      PATH: process.env.PATH,
      HOME: dir,
      XDG_DATA_HOME: dir,
      XDG_CONFIG_HOME: dir,
      GOMAXPROCS: '1',
    },
  })
  const missing = await new Promise<boolean>((resolve) => {
    child.once('error', () => resolve(true))
    child.once('spawn', () => resolve(false))
  })
  if (missing) {
    rmSync(dir, {recursive: true, force: true})
    return undefined
  }
  let err = ''
  child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)))
  const url = `http://127.0.0.1:${port}`
  await waitForProxy(url, probeBody, child, () => `caddy did not start: ${err}`)
  return {
    url,
    pid: child.pid!,
    stop: async () => {
      child.kill('SIGTERM')
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)))
      rmSync(dir, {recursive: true, force: true})
    },
  }
}
