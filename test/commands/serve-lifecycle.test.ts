/**
 * `toolgate serve` over time: file reloads (bad data keeps the last good data), readiness before
 * and after the initial load, an `api` source paging through a second `toolgate serve`, and
 * graceful shutdown with a request in flight.
 */
import {test} from 'node:test'
import assert from 'node:assert/strict'
import {createServer, type Server} from 'node:http'
import {connect} from 'node:net'
import {rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {FIXTURES, getJson, startServe, tempDir, writeConfig} from '../helpers/serve-process.ts'

type List = {
  servers: {server: {name: string; version: string}; _meta: Record<string, {isLatest: boolean}>}[]
  metadata: {count: number; nextCursor?: string}
}
const LIST = '/registry/default/v0.1/servers'

function server(name: string, version: string) {
  return {name, version, description: `${name} ${version}`}
}

async function until<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await fn().catch(() => undefined)
    if (v !== undefined) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

async function freePort(): Promise<number> {
  const srv = createServer()
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  const port = (srv.address() as {port: number}).port
  await new Promise((r) => srv.close(r))
  return port
}

test('a reload with bad data keeps serving the last good data; a good file is picked up', async (t) => {
  const dir = tempDir()
  t.after(() => rmSync(dir, {recursive: true, force: true}))
  const file = join(dir, 'servers.json')
  writeFileSync(
    file,
    JSON.stringify([server('io.example/a', '1.0.0'), server('io.example/b', '1.0.0')]),
  )
  const config = writeConfig(
    dir,
    'serve.yaml',
    'sources:\n  - name: local\n    file: {path: ./servers.json}\nauth: {mode: anonymous}\n',
  )
  const s = await startServe(['--config', config], {dir})
  t.after(() => s.stop())
  assert.equal(((await getJson(s.url + LIST)).body as List).metadata.count, 2)

  writeFileSync(file, '{"data": {"servers": [ not json')
  await until('the reload error in the log', async () =>
    /reload failed/.test(s.stderr()) ? true : undefined,
  )
  assert.match(s.stderr(), /source=local/)
  const after = await getJson(s.url + LIST)
  assert.equal(after.status, 200)
  assert.equal((after.body as List).metadata.count, 2)
  assert.equal((await getJson(s.internalUrl + '/readiness')).status, 200)
  const metrics = await (await fetch(s.internalUrl + '/metrics')).text()
  assert.match(metrics, /^toolgate_source_sync_errors_total\{source="local"\} [1-9]\d*$/m)

  writeFileSync(
    file,
    JSON.stringify({
      version: '1',
      meta: {},
      data: {
        servers: [
          server('io.example/a', '1.0.0'),
          server('io.example/b', '1.0.0'),
          server('io.example/c', '2.0.0'),
        ],
      },
    }),
  )
  await until('the new file to be served', async () =>
    ((await getJson(s.url + LIST)).body as List).metadata.count === 3 ? true : undefined,
  )
})

test('readiness is 503 until every source has loaded, then 200; the main port opens after the load', async (t) => {
  let release!: () => void
  const released = new Promise<void>((r) => (release = r))
  const upstream: Server = createServer((req, res) => {
    void released.then(() => {
      res.writeHead(200, {'content-type': 'application/json'})
      res.end(
        JSON.stringify({
          servers: [{server: server('io.example/slow', '1.0.0'), _meta: {}}],
          metadata: {count: 1},
        }),
      )
    })
  })
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r))
  t.after(() => new Promise((r) => upstream.close(r)))
  t.after(() => release())
  const dir = tempDir()
  t.after(() => rmSync(dir, {recursive: true, force: true}))
  const endpoint = `http://127.0.0.1:${(upstream.address() as {port: number}).port}`
  const config = writeConfig(
    dir,
    'serve.yaml',
    `sources:\n  - name: slow\n    api: {endpoint: "${endpoint}"}\n    syncPolicy: {interval: 1h}\nauth: {mode: anonymous}\n`,
  )
  const internalPort = await freePort()
  const starting = startServe(
    ['--config', config, '--internal-address', `127.0.0.1:${internalPort}`],
    {dir},
  )
  starting.catch(() => {})
  const internal = `http://127.0.0.1:${internalPort}`
  const notReady = await until('the internal server', () => getJson(internal + '/readiness'))
  assert.equal(notReady.status, 503)
  assert.deepEqual(notReady.body, {error: 'service not ready'})
  assert.deepEqual((await getJson(internal + '/health')).body, {status: 'healthy'})
  release()
  const s = await starting
  t.after(() => s.stop())
  const ready = await getJson(s.internalUrl + '/readiness')
  assert.equal(ready.status, 200)
  assert.deepEqual(ready.body, {status: 'ready'})
  assert.equal(
    ((await getJson(s.url + LIST)).body as List).servers[0]?.server.name,
    'io.example/slow',
  )
})

test('an api source pages through a second toolgate serve, applying its name filter', async (t) => {
  const up = await startServe(['--config', join(FIXTURES, 'anonymous.yaml')])
  t.after(() => up.stop())
  const dir = tempDir()
  t.after(() => rmSync(dir, {recursive: true, force: true}))
  const config = writeConfig(
    dir,
    'serve.json',
    JSON.stringify({
      sources: [
        {name: 'all', api: {endpoint: `${up.url}/registry/default`}, syncPolicy: {interval: '1h'}},
        {
          name: 'some',
          api: {endpoint: `${up.url}/registry/default`},
          syncPolicy: {interval: '1h'},
          filter: {names: {include: ['io.example/*'], exclude: ['io.example/legacy']}},
        },
      ],
      registries: [
        {name: 'default', sources: ['all']},
        {name: 'filtered', sources: ['some']},
      ],
      auth: {mode: 'anonymous'},
    }),
  )
  const down = await startServe(['--config', config], {dir})
  t.after(() => down.stop())
  const upBody = (await getJson(`${up.url}${LIST}?limit=100`)).body as List
  const downBody = (await getJson(`${down.url}${LIST}?limit=100`)).body as List
  const keys = (b: List) =>
    b.servers.map(
      (e) =>
        `${e.server.name}@${e.server.version}:${e._meta['io.modelcontextprotocol.registry/official']!.isLatest}`,
    )
  assert.equal(downBody.metadata.count, 11)
  assert.deepEqual(keys(downBody), keys(upBody))
  const filtered = (await getJson(`${down.url}/registry/filtered/v0.1/servers?limit=100`))
    .body as List
  assert.deepEqual(
    [...new Set(filtered.servers.map((e) => e.server.name))],
    ['io.example/calendar', 'io.example/weather'],
  )
})

test('SIGTERM stops accepting, completes the request in flight and exits 0; SIGINT exits 0 too', async (t) => {
  const s = await startServe(['--config', join(FIXTURES, 'anonymous.yaml')])
  t.after(() => s.stop('SIGKILL'))
  const {hostname, port} = new URL(s.url)
  // A request whose headers are half sent is in flight: the server must wait for it.
  const socket = connect(Number(port), hostname)
  t.after(() => socket.destroy())
  await new Promise<void>((r) => socket.once('connect', () => r()))
  let response = ''
  socket.setEncoding('utf8').on('data', (d: string) => (response += d))
  const closed = new Promise<void>((r) => socket.once('close', () => r()))
  socket.write(`GET ${LIST}?limit=1 HTTP/1.1\r\nHost: ${hostname}\r\n`)
  await new Promise((r) => setTimeout(r, 300))
  s.proc.kill('SIGTERM')
  await until('shutdown to begin', async () =>
    /shutting down/.test(s.stderr()) ? true : undefined,
  )
  // New connections are refused once shutdown has begun.
  await until('the listener to close', () =>
    fetch(s.url + LIST).then(
      () => undefined,
      () => true,
    ),
  )
  socket.write('\r\n')
  await closed
  assert.match(response, /^HTTP\/1\.1 200 OK\r\n/)
  assert.match(response, /"count":1/)
  assert.equal(await s.exited, 0)

  const s2 = await startServe(['--auth-mode', 'anonymous'])
  t.after(() => s2.stop('SIGKILL'))
  s2.proc.kill('SIGINT')
  const code2 = await s2.exited
  assert.equal(code2, 0, `signal ${s2.proc.signalCode} stderr: ${s2.stderr()}`)
})
