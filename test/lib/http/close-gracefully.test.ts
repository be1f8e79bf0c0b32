import assert from 'node:assert/strict'
import {createServer, request, Agent, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {test} from 'node:test'
import {closeGracefully} from '../../../src/lib/http/listen.ts'

const LONG = 10 * 60_000

async function start(
  handler: Parameters<typeof createServer>[1],
): Promise<{server: Server; port: number}> {
  const server = createServer(handler)
  server.keepAliveTimeout = LONG
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {server, port: (server.address() as AddressInfo).port}
}

function get(port: number, agent: Agent): Promise<{status: number; body: string}> {
  return new Promise((resolve, reject) => {
    const req = request({host: '127.0.0.1', port, path: '/', agent}, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (body += c))
      res.on('end', () => resolve({status: res.statusCode ?? 0, body}))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
}

test(
  'lets an in-flight request finish, then closes its keep-alive connection without waiting for keepAliveTimeout',
  {timeout: 60_000},
  async (t) => {
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    let arrived!: () => void
    const inFlight = new Promise<void>((r) => (arrived = r))
    const {server, port} = await start(async (_req, res) => {
      arrived()
      await gate
      res.end('done')
    })
    const agent = new Agent({keepAlive: true})
    t.after(() => {
      agent.destroy()
      server.closeAllConnections()
      server.close()
    })
    const answer = get(port, agent)
    await inFlight
    // The grace period and keep-alive timeout are 10 minutes: only the idle polling can end this.
    const closing = closeGracefully(server, LONG)
    release()
    assert.deepEqual(await answer, {status: 200, body: 'done'})
    await closing
    assert.equal(server.listening, false)
  },
)

test(
  'cuts a request still open when the grace period ends (an endless stream cannot hold shutdown)',
  {timeout: 60_000},
  async (t) => {
    let arrived!: () => void
    const inFlight = new Promise<void>((r) => (arrived = r))
    const {server, port} = await start((_req, res) => {
      res.writeHead(200, {'content-type': 'text/event-stream'})
      res.write(': open\n\n')
      arrived()
    })
    const agent = new Agent({keepAlive: true})
    t.after(() => {
      agent.destroy()
      server.closeAllConnections()
      server.close()
    })
    const answer = get(port, agent).catch((err: Error) => err)
    await inFlight
    await closeGracefully(server, 200)
    assert.equal(server.listening, false)
    assert.ok(await answer, 'the client saw its stream end')
  },
)

test('does nothing for a server that is not listening', async () => {
  await closeGracefully(createServer(), 10)
})
