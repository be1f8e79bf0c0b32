/**
 * The main-port handler in-process over a real SQLite store (`:memory:`): failure paths that a
 * running `serve` cannot be pushed into from outside (a store that stops answering, an
 * authenticator that throws), and the text fast path of the registry API.
 */
import {test} from 'node:test'
import assert from 'node:assert/strict'
import {createServer, request, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import type {BearerAuthenticator, OAuthConfig} from '../../../src/lib/auth/types.ts'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {createServeMetrics} from '../../../src/lib/metrics/serve-metrics.ts'
import type {ListQuery} from '../../../src/lib/registry/types.ts'
import {SqliteRegistryStore} from '../../../src/lib/registry/sqlite-store.ts'
import {createAuthGate} from '../../../src/lib/server/auth-gate.ts'
import {createMainHandler} from '../../../src/lib/server/main-handler.ts'

const LIST = '/registry/default/v0.1/servers'
const oauth: OAuthConfig = {
  resourceUrl: 'https://r.example',
  realm: 'mcp-registry',
  publicPaths: [],
  providers: [],
}

async function storeWithData(Store: typeof SqliteRegistryStore = SqliteRegistryStore) {
  const store = new Store({path: ':memory:'})
  await store.init()
  await store.setRegistries([{name: 'default', sources: ['s']}])
  const servers = ['a', 'b', 'c'].flatMap((n) =>
    ['1.0.0', '2.0.0'].map((version) => ({
      name: `io.example/${n}`,
      version,
      description: `${n} "quoted" ü`,
    })),
  )
  await store.replaceSource('s', servers, new Date('2025-01-01T00:00:00Z'))
  return store
}

async function serve(
  t: {after: (fn: () => unknown) => void},
  handler: ReturnType<typeof createMainHandler>,
): Promise<string> {
  const server: Server = createServer(handler)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.after(() => new Promise((r) => server.close(r)))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

test('a store failure is a 500 "internal server error" with the detail only in the log', async (t) => {
  const store = await storeWithData()
  const logger = createMemoryLogger()
  const url = await serve(
    t,
    createMainHandler({
      store,
      logger,
      metrics: createServeMetrics(),
      openApiJson: '{}',
      protectedResourceJson: undefined,
      gate: undefined,
    }),
  )
  await store.close()
  const res = await fetch(url + LIST)
  assert.equal(res.status, 500)
  assert.deepEqual(await res.json(), {error: 'internal server error'})
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff')
  assert.ok(
    logger.lines.some((l) =>
      /ERROR request failed .*path=\/registry\/default\/v0\.1\/servers/.test(l),
    ),
    logger.lines.join('\n'),
  )
})

test('an authenticator that throws denies with 401, never lets the request through', async (t) => {
  const store = await storeWithData()
  t.after(() => store.close())
  const throwing: BearerAuthenticator = {
    authenticate: async () => {
      throw new Error('provider exploded')
    },
    close: async () => {},
  }
  const logger = createMemoryLogger()
  const gate = createAuthGate(oauth, throwing, logger)
  const url = await serve(
    t,
    createMainHandler({
      store,
      logger,
      metrics: createServeMetrics(),
      openApiJson: '{}',
      protectedResourceJson: '{}',
      gate,
    }),
  )
  const res = await fetch(url + LIST, {headers: {authorization: 'Bearer x'}})
  assert.equal(res.status, 401)
  const body = (await res.json()) as {error: string}
  assert.ok(!body.error.includes('exploded'))
  assert.match(
    res.headers.get('www-authenticate') ?? '',
    /^Bearer realm="mcp-registry", error="invalid_token"/,
  )
})

test('the gate hands the authenticator every Authorization header sent and serves on acceptance', async (t) => {
  const store = await storeWithData()
  t.after(() => store.close())
  const seen: unknown[] = []
  const accepting: BearerAuthenticator = {
    authenticate: async (h) => {
      seen.push(h)
      return JSON.stringify(h) === '["Bearer good"]'
        ? {ok: true, principal: {provider: 'p', subject: 'alice', claims: {}}}
        : {ok: false, error: 'invalid_token', description: 'invalid token'}
    },
    close: async () => {},
  }
  const gate = createAuthGate(oauth, accepting, createMemoryLogger())
  const url = await serve(
    t,
    createMainHandler({
      store,
      logger: createMemoryLogger(),
      metrics: createServeMetrics(),
      openApiJson: '{}',
      protectedResourceJson: '{}',
      gate,
    }),
  )
  assert.equal((await fetch(url + LIST, {headers: {authorization: 'Bearer good'}})).status, 200)
  assert.equal((await fetch(url + LIST, {headers: {authorization: 'Bearer bad'}})).status, 401)
  assert.equal((await fetch(url + '/openapi.json')).status, 200)
  assert.deepEqual(seen, [['Bearer good'], ['Bearer bad']])
})

test('a store offering page text gives byte-identical bodies to the object path', async (t) => {
  class TextStore extends SqliteRegistryStore {
    calls = 0
    override async listServersText(registry: string, query: ListQuery) {
      this.calls++
      const page = await this.listServers(registry, query)
      return {
        servers: page.servers.map((e) => JSON.stringify(e)),
        ...(page.nextCursor ? {nextCursor: page.nextCursor} : {}),
      }
    }
  }
  const plain = await storeWithData()
  const text = (await storeWithData(TextStore)) as TextStore
  t.after(() => Promise.all([plain.close(), text.close()]))
  const mk = (store: SqliteRegistryStore) =>
    createMainHandler({
      store,
      logger: createMemoryLogger(),
      metrics: createServeMetrics(),
      openApiJson: '{}',
      protectedResourceJson: undefined,
      gate: undefined,
    })
  const a = await serve(t, mk(plain))
  const b = await serve(t, mk(text))
  for (const q of ['', '?limit=2', '?version=latest', '?search=B']) {
    const [x, y] = await Promise.all([
      fetch(a + LIST + q).then((r) => r.text()),
      fetch(b + LIST + q).then((r) => r.text()),
    ])
    assert.equal(y, x, q)
  }
  assert.equal(text.calls, 4)
})

// Sends `path` byte for byte (fetch and URL would remove dot segments before sending).
function rawGet(base: string, path: string, headers: Record<string, string> = {}) {
  const {port} = new URL(base)
  return new Promise<{status: number; body: string}>((resolve, reject) => {
    const req = request({host: '127.0.0.1', port, path, headers}, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (body += c))
      res.on('end', () => resolve({status: res.statusCode ?? 0, body}))
    })
    req.on('error', reject)
    req.setTimeout(30_000, () => req.destroy(new Error('timed out')))
    req.end()
  })
}

test('a path with a dot segment (literal or %2e) is a 400 naming the problem, before the auth gate', async (t) => {
  const store = await storeWithData()
  t.after(() => store.close())
  let authenticatorCalls = 0
  const authenticator: BearerAuthenticator = {
    authenticate: async () => {
      authenticatorCalls++
      return {ok: true, principal: {provider: 'p', subject: 'u', claims: {}}}
    },
    close: async () => {},
  }
  const url = await serve(
    t,
    createMainHandler({
      store,
      logger: createMemoryLogger(),
      metrics: createServeMetrics(),
      openApiJson: '{}',
      protectedResourceJson: '{}',
      gate: createAuthGate(
        {...oauth, publicPaths: ['/registry/public']},
        authenticator,
        createMemoryLogger(),
      ),
    }),
  )
  const refused = [
    `${LIST}/../servers`,
    `${LIST}/./io.example%2Fa/versions`,
    '/./openapi.json',
    '/.well-known/../registry/default/v0.1/servers',
    '/registry/public/../default/v0.1/servers',
    '/registry/%2e%2e/default/v0.1/servers',
    '/registry/%2E/default/v0.1/servers',
    '/registry/.%2E/default/v0.1/servers',
    `${LIST}/..`,
    `${LIST}/.?limit=1`,
    '/..',
  ]
  for (const path of refused) {
    const res = await rawGet(url, path, {authorization: 'Bearer x'})
    assert.equal(res.status, 400, path)
    assert.deepEqual(JSON.parse(res.body), {error: 'path: dot segments are not allowed'}, path)
  }
  assert.equal(authenticatorCalls, 0, 'refused before the gate')

  // Dots inside a segment are ordinary characters: versions, names, `...`, `.hidden`.
  for (const path of [
    `${LIST}/io.example%2Fa/versions/1.0.0`,
    `${LIST}/io.example%2Fa/versions/...`,
    `${LIST}/.hidden`,
    `${LIST}/%2e%2e%2e`,
  ]) {
    const res = await rawGet(url, path, {authorization: 'Bearer x'})
    assert.notEqual(res.status, 400, path)
  }
  assert.ok(authenticatorCalls > 0)
})
