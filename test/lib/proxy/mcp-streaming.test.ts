import assert from 'node:assert/strict'
import {after, before, describe, it} from 'node:test'
import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {SSEClientTransport} from '@modelcontextprotocol/sdk/client/sse.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type {Transport} from '@modelcontextprotocol/sdk/shared/transport.js'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {startProxy, type RunningProxy} from '../../../src/lib/proxy/proxy-server.ts'
import {startMcpUpstream, type McpUpstream} from '../../helpers/mcp-upstream.ts'
import {loopbackProxyConfig} from '../../helpers/proxy-config.ts'

/**
 * Real MCP server (server-everything) behind the proxy, real MCP SDK client in front, for both
 * HTTP transports.
 */
for (const mode of ['streamableHttp', 'sse'] as const) {
  describe(`MCP over the proxy (${mode})`, () => {
    let upstream: McpUpstream
    let proxy: RunningProxy
    let client: Client
    let transport: Transport
    const arrivals: Array<{
      method?: string
      id?: unknown
      params?: {progress?: number}
      result?: {content?: unknown}
    }> = []

    before(async () => {
      upstream = await startMcpUpstream(mode)
      proxy = await startProxy(loopbackProxyConfig(upstream.url, {name: 'everything'}), {
        logger: createMemoryLogger('info'),
      })
      client = new Client({name: 'toolgate-test', version: '1.0.0'})
      const endpoint = new URL(proxy.url + upstream.endpoint)
      transport =
        mode === 'sse'
          ? new SSEClientTransport(endpoint)
          : new StreamableHTTPClientTransport(endpoint)
      await client.connect(transport)
      // Record messages in arrival order at the transport, below the SDK's own (asynchronous)
      // notification dispatch, which may run a progress handler after a result that arrived later.
      const deliver = transport.onmessage
      transport.onmessage = (message, extra) => {
        arrivals.push(message as (typeof arrivals)[number])
        deliver?.(message, extra)
      }
    })
    after(async () => {
      await client?.close().catch(() => undefined)
      await proxy?.close()
      await upstream?.stop()
    })

    it('initializes and reports the server', () => {
      assert.equal(client.getServerVersion()?.name, 'mcp-servers/everything')
    })

    it('lists tools', async () => {
      const {tools} = await client.listTools()
      const names = tools.map((t) => t.name)
      assert.ok(names.includes('echo'), names.join(','))
      assert.ok(names.includes('trigger-long-running-operation'))
    })

    it('calls the echo tool', async () => {
      const result = await client.callTool({
        name: 'echo',
        arguments: {message: 'héllo through toolgate'},
      })
      assert.deepEqual(result.content, [{type: 'text', text: 'Echo: héllo through toolgate'}])
    })

    it('delivers progress notifications of a long-running tool before its result', async () => {
      let settled = false
      let firstProgressWhilePending: boolean | undefined
      let ping: Promise<unknown> | undefined
      const start = arrivals.length
      const result = await client.callTool(
        {name: 'trigger-long-running-operation', arguments: {duration: 4, steps: 4}},
        undefined,
        {
          onprogress: () => {
            firstProgressWhilePending ??= !settled
            // A round trip started on the first notification completes before the tool does only if
            // that notification was streamed, not held back with the rest of the response.
            ping ??= client.ping().then(() => arrivals.push({method: 'ping-done'}))
          },
          timeout: 60_000,
        },
      )
      settled = true
      await ping
      assert.match(JSON.stringify(result.content), /Long running operation completed/)
      const seen = arrivals
        .slice(start)
        .map((m) =>
          m.method === 'notifications/progress'
            ? `progress ${m.params?.progress}`
            : (m.method ?? (m.result?.content ? 'result' : 'other response')),
        )
        .filter((e) => e.startsWith('progress') || e === 'result' || e === 'ping-done')
      assert.deepEqual(
        seen.filter((e) => e !== 'ping-done'),
        ['progress 1', 'progress 2', 'progress 3', 'progress 4', 'result'],
      )
      assert.ok(seen.indexOf('ping-done') < seen.indexOf('result'), seen.join(', '))
      // The first notification was handed to the client while the call was still running.
      assert.equal(firstProgressWhilePending, true)
    })

    if (mode === 'streamableHttp') {
      it('round-trips the Mcp-Session-Id the server assigned', async () => {
        const sessionId = (transport as StreamableHTTPClientTransport).sessionId
        assert.match(sessionId ?? '', /^[0-9a-f-]{36}$/)
        // A request carrying that session id is accepted by the server only if the header passed
        // through unchanged; a bogus one is refused by the server (not by the proxy).
        const call = (sid: string) =>
          fetch(proxy.url + '/mcp', {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
              'mcp-session-id': sid,
              'mcp-protocol-version': '2025-06-18',
            },
            body: JSON.stringify({jsonrpc: '2.0', id: 99, method: 'ping'}),
          })
        const good = await call(sessionId!)
        assert.equal(good.status, 200)
        assert.match(await good.text(), /"id":99/)
        const bad = await call('00000000-0000-0000-0000-000000000000')
        assert.notEqual(bad.status, 200)
        await bad.text()
      })

      it('returns the server-assigned session id on initialize', async () => {
        const res = await fetch(proxy.url + '/mcp', {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: {
              protocolVersion: '2025-06-18',
              capabilities: {},
              clientInfo: {name: 'raw', version: '1'},
            },
          }),
        })
        assert.equal(res.status, 200)
        assert.match(res.headers.get('mcp-session-id') ?? '', /^[0-9a-f-]{36}$/)
        await res.body?.cancel()
      })
    }
  })
}
