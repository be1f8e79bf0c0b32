import {spawn, type ChildProcess} from 'node:child_process'
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http'
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

/** One request as the recording upstream saw it. */
export interface RecordedRequest {
  method: string
  url: string
  headers: IncomingMessage['headers']
  rawHeaders: string[]
  body: Buffer
  /** Set when the request's connection closed before the response finished (an abort). */
  aborted: boolean
}

export interface RecordingUpstream {
  url: string
  server: Server
  requests: RecordedRequest[]
  /** Replace the responder; default answers 200 JSON `{"ok":true}`. */
  respond: (
    handler: (req: IncomingMessage, res: ServerResponse, rec: RecordedRequest) => void,
  ) => void
  /** Resolves when the nth request (1-based) has arrived. */
  waitForRequest(n?: number, timeoutMs?: number): Promise<RecordedRequest>
  close(): Promise<void>
}

/**
 * A real HTTP server on 127.0.0.1 that records what reaches it (headers exactly as received), for
 * assertions about what the proxy forwards. Not a fake MCP server: tests that need MCP semantics use
 * server-everything above.
 */
export async function startRecordingUpstream(): Promise<RecordingUpstream> {
  const requests: RecordedRequest[] = []
  const waiters: Array<() => void> = []
  let handler = (_req: IncomingMessage, res: ServerResponse, _rec: RecordedRequest) => {
    res.writeHead(200, {'content-type': 'application/json'})
    res.end('{"ok":true}')
  }
  const server = createHttpServer((req, res) => {
    const rec: RecordedRequest = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      rawHeaders: req.rawHeaders,
      body: Buffer.alloc(0),
      aborted: false,
    }
    res.once('close', () => {
      if (!res.writableFinished) rec.aborted = true
    })
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('error', () => undefined)
    req.on('end', () => {
      rec.body = Buffer.concat(chunks)
    })
    requests.push(rec)
    for (const w of waiters.splice(0)) w()
    handler(req, res, rec)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  const port = (server.address() as {port: number}).port
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    requests,
    respond(h) {
      handler = h
    },
    async waitForRequest(n = 1, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs
      while (requests.length < n) {
        if (Date.now() > deadline)
          throw new Error(`upstream saw ${requests.length} requests, wanted ${n}`)
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, 200)
          waiters.push(() => {
            clearTimeout(t)
            resolve()
          })
        })
      }
      return requests[n - 1] as RecordedRequest
    },
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
