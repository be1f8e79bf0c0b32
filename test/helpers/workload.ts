import {readdir, readFile} from 'node:fs/promises'
import {join} from 'node:path'
import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {SSEClientTransport} from '@modelcontextprotocol/sdk/client/sse.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type {ClientCapabilities} from '@modelcontextprotocol/sdk/types.js'
import {runCli, stop, type Run} from './proxy-run.ts'

/** server-everything over stdio, as a user would type it after `--`. */
export const EVERYTHING = [
  process.execPath,
  'node_modules/@modelcontextprotocol/server-everything/dist/index.js',
  'stdio',
]
export const UNRULY = [process.execPath, 'test/fixtures/mcp/unruly-server.ts']

export interface ForegroundWorkload {
  run: Run
  url: string
  sseUrl: string | undefined
  port: number
  stop(): Promise<void>
}

/** `toolgate run --foreground --json NAME [args] -- command…`, resolved once it prints its URL. */
export async function runForeground(
  name: string,
  args: string[],
  command: string[],
  home: string,
  env: NodeJS.ProcessEnv = {},
): Promise<ForegroundWorkload> {
  const run = runCli(['run', name, '--foreground', '--json', ...args, '--', ...command], home, env)
  const line = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`run did not start: ${run.stderr()}`)), 60_000)
    const check = () => {
      const l = run
        .stdout()
        .split('\n')
        .find((x) => x.startsWith('{'))
      if (l) {
        clearTimeout(timer)
        resolve(l)
      }
    }
    run.child.stdout?.on('data', check)
    void run.exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`run exited (${code}): ${run.stderr()}`))
    })
  })
  const info = JSON.parse(line) as {url: string; sseUrl?: string; port: number}
  return {run, url: info.url, sseUrl: info.sseUrl, port: info.port, stop: () => stop(run)}
}

export async function mcpClient(
  url: string,
  options: {sse?: boolean; token?: string; capabilities?: ClientCapabilities; name?: string} = {},
): Promise<Client> {
  const headers: Record<string, string> = options.token
    ? {authorization: `Bearer ${options.token}`}
    : {}
  const client = new Client(
    {name: options.name ?? 'toolgate-test', version: '1.0.0'},
    {capabilities: options.capabilities ?? {}},
  )
  const transport = options.sse
    ? new SSEClientTransport(new URL(url), {
        requestInit: {headers},
        eventSourceInit: {
          fetch: (u, init) =>
            fetch(u, {
              ...init,
              headers: {...(init?.headers as Record<string, string>), ...headers},
            }),
        },
      })
    : new StreamableHTTPClientTransport(new URL(url), {requestInit: {headers}})
  await client.connect(transport)
  return client
}

/** The text of a tool result's first content item. */
export function textOf(result: unknown): string {
  const content = (result as {content?: Array<{type: string; text?: string}>}).content ?? []
  return content.map((c) => c.text ?? '').join('')
}

/** Every file under a directory, with its content (to prove a secret is in none of them). */
export async function allFiles(dir: string): Promise<Array<{path: string; text: string}>> {
  const out: Array<{path: string; text: string}> = []
  const walk = async (d: string) => {
    for (const entry of await readdir(d, {withFileTypes: true}).catch(() => [])) {
      const p = join(d, entry.name)
      if (entry.isDirectory()) await walk(p)
      else if (entry.isFile()) out.push({path: p, text: await readFile(p, 'utf8')})
    }
  }
  await walk(dir)
  return out
}
