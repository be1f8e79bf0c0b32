import assert from 'node:assert/strict'
import {readFileSync} from 'node:fs'
import {after, before, describe, it} from 'node:test'
import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {startProxy, type RunningProxy} from '../../../src/lib/proxy/proxy-server.ts'
import {startMcpUpstream, type McpUpstream} from '../../helpers/mcp-upstream.ts'
import {loopbackProxyConfig} from '../../helpers/proxy-config.ts'

/**
 * Established TCP connections whose LOCAL port is `port`, i.e. the connections the real
 * server-everything holds open (from the kernel's tables: Linux /proc/net/tcp{,6}, state 01).
 * Observing the server's side of the connection is what shows the cancellation reached it.
 */
function establishedAt(port: number): number {
  const hex = port.toString(16).toUpperCase().padStart(4, '0')
  let n = 0
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch {
      continue
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/)
      if (f.length > 3 && f[1]?.endsWith(`:${hex}`) && f[3] === '01') n++
    }
  }
  return n
}

async function until(what: string, cond: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe('a client leaving mid-call through the proxy (real server-everything, real SDK client)', () => {
  let upstream: McpUpstream
  let proxy: RunningProxy
  before(async () => {
    upstream = await startMcpUpstream('streamableHttp')
    proxy = await startProxy(loopbackProxyConfig(upstream.url, {name: 'everything'}), {
      logger: createMemoryLogger('info'),
    })
  })
  after(async () => {
    await proxy?.close()
    await upstream?.stop()
  })

  it(
    'closes the upstream connection that carried the call long before the tool would finish',
    {skip: process.platform !== 'linux' && 'reads the kernel connection table of Linux'},
    async () => {
      const client = new Client({name: 'toolgate-abort-test', version: '1.0.0'})
      const transport = new StreamableHTTPClientTransport(new URL(proxy.url + upstream.endpoint))
      await client.connect(transport)
      const abort = new AbortController()
      let progressed!: () => void
      const firstProgress = new Promise<void>((resolve) => (progressed = resolve))
      // 60 s of work: a connection still open after the abort would stay open for about that long.
      const call = client
        .callTool(
          {name: 'trigger-long-running-operation', arguments: {duration: 60, steps: 60}},
          undefined,
          {
            signal: abort.signal,
            timeout: 120_000,
            onprogress: () => progressed(),
          },
        )
        .catch((err: unknown) => err)
      try {
        await firstProgress
        const during = establishedAt(upstream.port)
        assert.ok(during >= 1, 'the call holds an upstream connection')
        // The SDK's AbortSignal cancels the request (notifications/cancelled); closing the
        // transport aborts its HTTP streams, which the proxy must pass on to the target.
        abort.abort(new Error('user gave up'))
        await client.close()
        await call
        await until(
          'the target to see its connections closed',
          () => establishedAt(upstream.port) < during,
          20_000,
        )
      } finally {
        abort.abort()
        await client.close().catch(() => undefined)
      }
    },
  )
})
