/**
 * nginx (Debian) as a reverse proxy baseline: one worker, keepalive upstream, no buffering,
 * started from a throwaway prefix directory. `probeBody` is POSTed to /mcp until it answers.
 */
import {spawn, type ChildProcess} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {waitForProxy} from './processes.ts'

export async function startNginx(
  upstreamPort: number,
  probeBody: string,
): Promise<{url: string; worker: () => number; stop: () => Promise<void>}> {
  const dir = mkdtempSync(join(tmpdir(), 'tg-bench-nginx-'))
  const port = await freePort()
  writeFileSync(
    join(dir, 'nginx.conf'),
    `worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  upstream mcp { server 127.0.0.1:${upstreamPort}; keepalive 128; }
  server {
    listen 127.0.0.1:${port};
    client_max_body_size 8m;
    location / {
      proxy_pass http://mcp;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
    }
  }
}
`,
  )
  const child: ChildProcess = spawn(
    'nginx',
    ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'],
    {stdio: ['ignore', 'ignore', 'pipe']},
  )
  let err = ''
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()))
  const url = `http://127.0.0.1:${port}`
  await waitForProxy(url, probeBody, child, () => `nginx did not start: ${err}`)
  return {
    url,
    // The one worker does the proxying; the master only supervises.
    worker: () =>
      Number(
        readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(' ')[0],
      ),
    stop: async () => {
      child.kill('SIGTERM')
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)))
      rmSync(dir, {recursive: true, force: true})
    },
  }
}

export async function freePort(): Promise<number> {
  const {createServer} = await import('node:net')
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as {port: number}).port
      s.close(() => resolve(p))
    })
  })
}
