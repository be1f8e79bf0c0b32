import {spawn, type ChildProcess} from 'node:child_process'
import {createServer} from 'node:net'
import {createRequire} from 'node:module'

/**
 * Starts the real `@modelcontextprotocol/server-everything` as a child process on a free port
 * (testing.md: it binds all interfaces and takes `PORT` from the environment).
 *
 * - `streamableHttp`: endpoint `<url>/mcp`
 * - `sse`: endpoints `<url>/sse` (GET stream) and `<url>/message` (POST)
 *
 * `stop()` kills the child and waits for it to exit; call it in `after()` / `finally`.
 */
export interface McpUpstream {
  mode: 'streamableHttp' | 'sse'
  port: number
  /** `http://127.0.0.1:<port>` (no path). */
  url: string
  /** The MCP endpoint for this mode: `/mcp` or `/sse`. */
  endpoint: string
  child: ChildProcess
  /** Everything the server printed (stdout + stderr), for assertions and debugging. */
  output(): string
  stop(): Promise<void>
}

const require = createRequire(import.meta.url)

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as {port: number}).port
      srv.close(() => resolve(port))
    })
  })
}

function entryPoint(): string {
  return require.resolve('@modelcontextprotocol/server-everything/dist/index.js')
}

async function startOnce(mode: 'streamableHttp' | 'sse', timeoutMs: number): Promise<McpUpstream> {
  const port = await freePort()
  const child = spawn(process.execPath, [entryPoint(), mode], {
    env: {...process.env, PORT: String(port)},
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()))
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve()
    else child.once('exit', () => resolve())
  })
  const ready = /listening on port|Server is running on port/
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup()
      child.kill('SIGKILL')
      reject(new Error(`server-everything ${mode} did not start within ${timeoutMs} ms:\n${out}`))
    }, timeoutMs)
    const onData = () => {
      if (ready.test(out)) {
        cleanup()
        resolve()
      }
    }
    const onExit = () => {
      cleanup()
      reject(new Error(`server-everything ${mode} exited before listening:\n${out}`))
    }
    const cleanup = () => {
      clearTimeout(timer)
      child.stdout?.off('data', onData)
      child.stderr?.off('data', onData)
      child.off('exit', onExit)
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', onData)
    child.once('exit', onExit)
    onData()
  })
  const url = `http://127.0.0.1:${port}`
  return {
    mode,
    port,
    url,
    endpoint: mode === 'sse' ? '/sse' : '/mcp',
    child,
    output: () => out,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM')
        const t = setTimeout(() => child.kill('SIGKILL'), 3000)
        await exited
        clearTimeout(t)
      }
    },
  }
}

/** Starts server-everything; retries on a port race (another process took the free port). */
export async function startMcpUpstream(
  mode: 'streamableHttp' | 'sse',
  opts: {timeoutMs?: number} = {},
): Promise<McpUpstream> {
  let lastErr: unknown
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await startOnce(mode, opts.timeoutMs ?? 30_000)
    } catch (err) {
      lastErr = err
      if (!/EADDRINUSE|already in use/.test(String(err))) throw err
    }
  }
  throw lastErr
}
