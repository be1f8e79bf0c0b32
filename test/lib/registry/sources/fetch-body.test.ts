import {test, describe, before, after} from 'node:test'
import assert from 'node:assert/strict'
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'
import {createOutboundClient, type OutboundClient} from '../../../../src/lib/http/outbound.ts'
import {
  fetchBody,
  MAX_REDIRECTS,
  operatorUrlIsPrivate,
} from '../../../../src/lib/registry/sources/fetch-body.ts'
import {SqliteRegistryStore} from '../../../../src/lib/registry/sqlite-store.ts'
import {SourceSyncer} from '../../../../src/lib/registry/sources/syncer.ts'
import {isToolgateError, type ToolgateError} from '../../../../src/lib/errors.ts'

// Registry sources fetch through the shared guarded client (src/lib/http/outbound.ts). Everything
// here is real: a loopback HTTP server and the real client; nothing is faked.

type Handler = (req: IncomingMessage, res: ServerResponse) => void

let server: Server
let base: string
let handler: Handler = (_req, res) => res.end('{}')
const hits: string[] = []
const clients: OutboundClient[] = []

// Loopback is private: sources allow it because their URLs are operator-configured (contract §2).
function client(timeoutMs = 10_000, allowPrivateIP = true): OutboundClient {
  const c = createOutboundClient({allowPrivateIP, timeoutMs, label: 'test'})
  clients.push(c)
  return c
}

async function sourceError(promise: Promise<unknown>): Promise<ToolgateError> {
  try {
    await promise
  } catch (err) {
    assert.ok(isToolgateError(err, 'ERR_SOURCE_LOAD'), String(err))
    return err
  }
  assert.fail('expected ERR_SOURCE_LOAD')
}

before(async () => {
  server = createServer((req, res) => {
    hits.push(req.url ?? '')
    handler(req, res)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

after(async () => {
  for (const c of clients) await c.close().catch(() => undefined)
  server.closeAllConnections()
  await new Promise<void>((r) => server.close(() => r()))
})

describe('fetchBody', () => {
  test('returns the body bytes of a 2xx, asking for JSON', async () => {
    let accept: string | undefined
    handler = (req, res) => {
      accept = req.headers.accept
      res.writeHead(200, {'content-type': 'application/json'}).end('{"ok":"é"}')
    }
    const body = await fetchBody(client(), `${base}/doc.json`, {maxBytes: 1024})
    assert.ok(Buffer.isBuffer(body))
    assert.equal(body.toString('utf8'), '{"ok":"é"}')
    assert.equal(accept, 'application/json')
  })

  test('goes through the guarded client: without allowPrivateIP a loopback URL is refused', async () => {
    handler = (_req, res) => res.end('{}')
    hits.length = 0
    const err = await sourceError(
      fetchBody(client(10_000, false), `${base}/doc.json`, {maxBytes: 1024}),
    )
    assert.match(err.message, /request failed \(ERR_OUTBOUND_BLOCKED\)/)
    assert.equal(hits.length, 0, 'the server was never contacted')
  })

  for (const status of [301, 302, 303, 307, 308]) {
    test(`a ${status} redirect is followed (a loopback operator URL may redirect on loopback)`, async () => {
      hits.length = 0
      handler = (req, res) => {
        if (req.url === '/moved') {
          res.writeHead(status, {location: '/elsewhere?token=loc-secret'}).end()
        } else res.end('[]')
      }
      const body = await fetchBody(client(), `${base}/moved`, {maxBytes: 1024})
      assert.equal(body.toString(), '[]')
      assert.deepEqual(hits, ['/moved', '/elsewhere?token=loc-secret'])
    })
  }

  test(`more than ${MAX_REDIRECTS} redirects fail without showing any Location`, async () => {
    hits.length = 0
    handler = (req, res) => {
      const n = Number(new URL(req.url ?? '/', base).searchParams.get('n') ?? 0)
      res.writeHead(302, {location: `/loop?n=${n + 1}&token=loc-secret`}).end()
    }
    const err = await sourceError(fetchBody(client(), `${base}/loop`, {maxBytes: 1024}))
    assert.match(err.message, new RegExp(`more than ${MAX_REDIRECTS} redirects`))
    assert.ok(!err.message.includes('loc-secret'), err.message)
    assert.equal(hits.length, MAX_REDIRECTS + 1)
  })

  for (const [location, why] of [
    ['ftp://127.0.0.1/x', /redirect to a ftp: URL refused/],
    ['http://user:pw@127.0.0.1/x', /redirect to a URL with credentials refused/],
  ] as const) {
    test(`a redirect to ${location.split(':')[0]}… is refused without contacting it`, async () => {
      hits.length = 0
      handler = (_req, res) => res.writeHead(302, {location}).end()
      const err = await sourceError(fetchBody(client(), `${base}/moved`, {maxBytes: 1024}))
      assert.match(err.message, why)
      assert.ok(!err.message.includes('pw'), err.message)
      assert.deepEqual(hits, ['/moved'])
    })
  }

  test('only an operator URL on a loopback or private host lets redirects reach private addresses', () => {
    for (const [url, expected] of [
      ['http://127.0.0.1:8080/r.json', true],
      ['http://localhost/r.json', true],
      ['http://[::1]/r.json', true],
      ['http://10.1.2.3/r.json', true],
      ['https://registry.example.com/r.json', false],
      ['https://93.184.216.34/r.json', false],
    ] as const) {
      assert.equal(operatorUrlIsPrivate(new URL(url)), expected, url)
    }
  })

  test('a non-2xx is an error naming the status and the URL without its query', async () => {
    handler = (_req, res) => res.writeHead(503).end('down')
    const err = await sourceError(
      fetchBody(client(), `${base}/r.json?token=q-secret`, {maxBytes: 1024}),
    )
    assert.match(err.message, /HTTP 503/)
    assert.ok(err.message.includes(`${base}/r.json?…`), err.message)
    assert.ok(!err.message.includes('q-secret'), err.message)
  })

  test('a URL with credentials is refused without contacting the server or showing them', async () => {
    hits.length = 0
    const url = `http://reader:pa55word@${base.slice('http://'.length)}/r.json`
    const err = await sourceError(fetchBody(client(), url, {maxBytes: 1024}))
    assert.match(err.message, /credentials in the URL are not supported/)
    assert.ok(err.message.startsWith(`${base}/r.json:`), err.message)
    assert.ok(!err.message.includes('pa55word') && !err.message.includes('reader'), err.message)
    assert.equal(hits.length, 0)
  })

  test('a declared Content-Length above the cap fails before the body is read', async () => {
    handler = (_req, res) => {
      res.writeHead(200, {'content-length': '2048'})
      res.write('x'.repeat(100)) // the rest never comes: only the declaration can end this early
    }
    const err = await sourceError(fetchBody(client(), `${base}/big`, {maxBytes: 1024}))
    assert.match(err.message, /body larger than 1024 bytes/)
  })

  test('a streamed body (no Content-Length) is cut at the cap', async () => {
    handler = (_req, res) => {
      res.writeHead(200, {'content-type': 'application/json'})
      for (let i = 0; i < 8; i++) res.write('y'.repeat(512))
      res.end()
    }
    const err = await sourceError(fetchBody(client(), `${base}/stream`, {maxBytes: 1024}))
    assert.match(err.message, /body larger than 1024 bytes/)
    // Exactly at the cap is accepted.
    handler = (_req, res) => {
      res.writeHead(200)
      res.write('z'.repeat(512))
      res.end('z'.repeat(512))
    }
    assert.equal((await fetchBody(client(), `${base}/exact`, {maxBytes: 1024})).length, 1024)
  })

  test('the timeout covers the whole exchange: no answer, or headers then a stalled body', async () => {
    handler = () => {} // never answers
    let err = await sourceError(fetchBody(client(300), `${base}/silent`, {maxBytes: 1024}))
    assert.match(err.message, /timed out after 300 ms/)

    handler = (_req, res) => {
      res.writeHead(200, {'content-type': 'application/json'})
      res.write('[') // and nothing more
    }
    err = await sourceError(fetchBody(client(300), `${base}/stall`, {maxBytes: 1024}))
    assert.match(err.message, /timed out after 300 ms/)
  })

  test("the caller's signal cancels the request", async () => {
    handler = () => {}
    const abort = new AbortController()
    const pending = fetchBody(client(), `${base}/slow`, {maxBytes: 1024, signal: abort.signal})
    setTimeout(() => abort.abort(), 50)
    const err = await sourceError(pending)
    assert.match(err.message, /cancelled/)
  })

  test('a refused connection names the reason', async () => {
    const probe = createServer()
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r))
    const port = (probe.address() as AddressInfo).port
    await new Promise<void>((r) => probe.close(() => r()))
    const err = await sourceError(
      fetchBody(client(), `http://127.0.0.1:${port}/x.json`, {maxBytes: 1024}),
    )
    assert.match(err.message, /request failed \(ECONNREFUSED\)/)
  })
})

describe('SourceSyncer and the outbound client', () => {
  test('an api upstream stuck in a redirect loop fails start naming the source', async () => {
    hits.length = 0
    handler = (_req, res) => res.writeHead(302, {location: `${base}/reg/v0.1/servers`}).end()
    const store = new SqliteRegistryStore({path: ':memory:'})
    await store.init()
    await store.setRegistries([{name: 'default', sources: ['up']}])
    const syncer = new SourceSyncer({
      store,
      sources: [{name: 'up', kind: 'api', endpoint: `${base}/reg`, syncIntervalMs: 60_000}],
      watch: false,
    })
    try {
      const err = await sourceError(syncer.start())
      assert.match(err.message, /source "up": .*\/reg\/v0\.1\/servers.*more than \d+ redirects/)
    } finally {
      await syncer.stop()
      await store.close()
    }
  })

  test('a given client is used (its guard applies) and left open by stop()', async () => {
    handler = (_req, res) => res.end('[]')
    const guarded = client(10_000, false)
    const store = new SqliteRegistryStore({path: ':memory:'})
    await store.init()
    await store.setRegistries([{name: 'default', sources: ['remote']}])
    const syncer = new SourceSyncer({
      store,
      sources: [{name: 'remote', kind: 'file', url: `${base}/f.json`, syncIntervalMs: 60_000}],
      outbound: guarded,
      watch: false,
    })
    try {
      const err = await sourceError(syncer.start())
      assert.match(err.message, /request failed \(ERR_OUTBOUND_BLOCKED\)/)
    } finally {
      await syncer.stop()
      await store.close()
    }
    // Still usable after the syncer stopped: the syncer only closes clients it created.
    const again = await fetchBody(client(), `${base}/f.json`, {maxBytes: 64})
    assert.equal(again.toString(), '[]')
    await assert.rejects(
      fetchBody(guarded, `${base}/f.json`, {maxBytes: 64}),
      (e) => isToolgateError(e, 'ERR_SOURCE_LOAD') && /ERR_OUTBOUND_BLOCKED/.test(e.message),
    )
  })
})
