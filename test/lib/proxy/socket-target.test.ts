import assert from 'node:assert/strict'
import {mkdtemp, rm} from 'node:fs/promises'
import {createServer, type Server} from 'node:http'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {startProxy, type RunningProxy} from '../../../src/lib/proxy/proxy-server.ts'
import {loopbackProxyConfig} from '../../helpers/proxy-config.ts'

/**
 * A target reached through a unix socket (the seam `toolgate run` uses for its private stdio
 * bridge endpoint): the pipeline is unchanged, only the connection goes to the socket.
 */
describe('proxy target on a unix socket', () => {
  let dir: string
  let server: Server
  const seen: Array<{url: string; host: string | undefined; body: string}> = []
  const proxies: RunningProxy[] = []
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tg-sock-')) // mkdtemp: 0700
    server = createServer((req, res) => {
      let body = ''
      req.on('data', (c: Buffer) => (body += c.toString()))
      req.on('end', () => {
        seen.push({url: req.url ?? '', host: req.headers.host, body})
        res.writeHead(200, {'content-type': 'application/json'})
        res.end('{"jsonrpc":"2.0","id":1,"result":{}}')
      })
    })
    await new Promise<void>((resolve) => server.listen(join(dir, 'bridge.sock'), () => resolve()))
  })
  after(async () => {
    await Promise.all(proxies.map((p) => p.close()))
    await new Promise<void>((resolve) => server.close(() => resolve()))
    await rm(dir, {recursive: true, force: true})
  })

  it('forwards through the socket, keeping the base path and the Host of the target URI', async () => {
    const p = await startProxy(
      loopbackProxyConfig('http://bridge.local/base', {targetSocketPath: join(dir, 'bridge.sock')}),
      {logger: createMemoryLogger()},
    )
    proxies.push(p)
    const res = await fetch(`${p.url}/mcp`, {
      method: 'POST',
      headers: {'content-type': 'application/json'},
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    })
    assert.equal(res.status, 200)
    assert.deepEqual(await res.json(), {jsonrpc: '2.0', id: 1, result: {}})
    assert.deepEqual(seen.at(-1), {
      url: '/base/mcp',
      host: 'bridge.local',
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    })
  })

  it('answers 502 when the socket is not there', async () => {
    const p = await startProxy(
      loopbackProxyConfig('http://bridge.local', {targetSocketPath: join(dir, 'missing.sock')}),
      {logger: createMemoryLogger()},
    )
    proxies.push(p)
    const res = await fetch(`${p.url}/mcp`, {method: 'POST', body: '{}'})
    assert.equal(res.status, 502)
    assert.deepEqual(await res.json(), {error: 'upstream unavailable'})
  })
})
