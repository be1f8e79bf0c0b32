import {test} from 'node:test'
import assert from 'node:assert/strict'
import {createServer as createHttpServer, type Server} from 'node:http'
import {createServer as createHttpsServer} from 'node:https'
import type {AddressInfo} from 'node:net'
import type {LookupFunction} from 'node:net'
import {createOutboundClient} from '../../../src/lib/http/outbound.ts'
import {blockedRange} from '../../../src/lib/http/ip-ranges.ts'
import {isToolgateError} from '../../../src/lib/errors.ts'
import {createTestPki} from '../../helpers/tls.ts'

async function listen(server: Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return (server.address() as AddressInfo).port
}
async function close(server: Server): Promise<void> {
  server.closeAllConnections()
  await new Promise<void>((r) => server.close(() => r()))
}

/** A resolver that answers every name with one fixed address, like a hostile DNS zone would. */
function lookupTo(address: string): LookupFunction {
  return ((_host: string, opts: {all?: boolean}, cb: (...a: unknown[]) => void) => {
    const family = address.includes(':') ? 6 : 4
    if (opts.all) cb(null, [{address, family}])
    else cb(null, address, family)
  }) as unknown as LookupFunction
}

const ranges: Array<[string, string | undefined]> = [
  ['127.0.0.1', 'loopback'],
  ['127.255.0.9', 'loopback'],
  ['10.0.0.1', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.168.1.1', 'private'],
  ['169.254.169.254', 'link-local'],
  ['100.64.0.1', 'carrier-grade NAT'],
  ['0.0.0.0', 'unspecified'],
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['fe80::1', 'link-local'],
  ['fd12:3456::1', 'unique-local'],
  ['fc00::1', 'unique-local'],
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:a9fe:a9fe', 'link-local'],
  ['::ffff:10.0.0.1', 'private'],
  ['8.8.8.8', undefined],
  ['172.32.0.1', undefined],
  ['2606:4700:4700::1111', undefined],
  ['::ffff:1.1.1.1', undefined],
]
for (const [address, expected] of ranges) {
  test(`classifies ${address} as ${expected ?? 'public'}`, () => {
    assert.equal(blockedRange(address), expected)
  })
}

test('refuses a literal loopback address unless allowPrivateIP, naming the host but not the path', async (t) => {
  const server = createHttpServer((_req, res) => res.end('{"ok":true}'))
  const port = await listen(server)
  t.after(() => close(server))
  const guarded = createOutboundClient()
  const open = createOutboundClient({allowPrivateIP: true})
  t.after(() => guarded.close())
  t.after(() => open.close())
  await assert.rejects(
    guarded.fetch(`http://127.0.0.1:${port}/secret-path?token=abc`),
    (err: unknown) => {
      assert.ok(isToolgateError(err, 'ERR_OUTBOUND_BLOCKED'))
      assert.match(err.message, /127\.0\.0\.1/)
      assert.doesNotMatch(err.message, /secret-path|token=abc/)
      return true
    },
  )
  const res = await open.fetchJson(`http://127.0.0.1:${port}/x`)
  assert.deepEqual(res.body, {ok: true})
})

test('refuses a DNS name that resolves to 127.0.0.1, checked at connect time', async (t) => {
  const server = createHttpServer((_req, res) => res.end('{}'))
  const port = await listen(server)
  t.after(() => close(server))
  // `localhost` through the system resolver, and a public-looking name through a hostile resolver
  const cases: Array<[ReturnType<typeof createOutboundClient>, string]> = [
    [createOutboundClient(), 'localhost'],
    [createOutboundClient({lookup: lookupTo('127.0.0.1')}), 'jwks.example.com'],
  ]
  for (const [client, host] of cases) {
    t.after(() => client.close())
    await assert.rejects(client.fetch(`http://${host}:${port}/`), (err: unknown) =>
      isToolgateError(err, 'ERR_OUTBOUND_BLOCKED'),
    )
  }
  const hostile = createOutboundClient({lookup: lookupTo('::ffff:127.0.0.1')})
  t.after(() => hostile.close())
  await assert.rejects(hostile.fetch(`http://issuer.example.com:${port}/`), (err: unknown) => {
    assert.ok(isToolgateError(err, 'ERR_OUTBOUND_BLOCKED'))
    assert.match(err.message, /issuer\.example\.com/)
    assert.match(err.message, /resolved to ::ffff:127\.0\.0\.1/)
    return true
  })
})

test('times out a server that never answers with ERR_OUTBOUND_TIMEOUT', async (t) => {
  const server = createHttpServer(() => {})
  const port = await listen(server)
  t.after(() => close(server))
  const client = createOutboundClient({allowPrivateIP: true, timeoutMs: 300})
  t.after(() => client.close())
  await assert.rejects(client.fetchJson(`http://127.0.0.1:${port}/`), (err: unknown) =>
    isToolgateError(err, 'ERR_OUTBOUND_TIMEOUT'),
  )
})

test('a refused connection is ERR_OUTBOUND_FAILED naming the host', async () => {
  const server = createHttpServer()
  const port = await listen(server)
  await close(server)
  const client = createOutboundClient({allowPrivateIP: true})
  try {
    await assert.rejects(client.fetch(`http://127.0.0.1:${port}/`), (err: unknown) => {
      assert.ok(isToolgateError(err, 'ERR_OUTBOUND_FAILED'))
      assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${port}`))
      return true
    })
  } finally {
    await client.close()
  }
})

test('caCertPath makes a private CA trusted; without it TLS verification fails', async (t) => {
  const pki = createTestPki()
  t.after(() => pki.cleanup())
  const server = createHttpsServer({cert: pki.cert, key: pki.key}, (_req, res) =>
    res.end('{"tls":true}'),
  )
  const port = await listen(server as unknown as Server)
  t.after(() => close(server as unknown as Server))
  const trusted = createOutboundClient({allowPrivateIP: true, caCertPath: pki.caCertPath})
  const untrusted = createOutboundClient({allowPrivateIP: true})
  t.after(() => trusted.close())
  t.after(() => untrusted.close())
  assert.deepEqual((await trusted.fetchJson(`https://127.0.0.1:${port}/`)).body, {tls: true})
  await assert.rejects(untrusted.fetch(`https://127.0.0.1:${port}/`), (err: unknown) => {
    assert.ok(isToolgateError(err, 'ERR_OUTBOUND_FAILED'))
    assert.match(err.message, /TLS/)
    return true
  })
})

test('a body over maxBytes is refused rather than buffered', async (t) => {
  const server = createHttpServer((_req, res) => res.end('x'.repeat(5000)))
  const port = await listen(server)
  t.after(() => close(server))
  const client = createOutboundClient({allowPrivateIP: true})
  t.after(() => client.close())
  await assert.rejects(
    client.fetchJson(`http://127.0.0.1:${port}/`, {maxBytes: 1000}),
    (err: unknown) => isToolgateError(err, 'ERR_OUTBOUND_FAILED'),
  )
})

test('an unreadable caCertPath fails when the client is built', () => {
  assert.throws(
    () => createOutboundClient({caCertPath: '/nonexistent/ca.pem', label: 'provider "k8s"'}),
    (err: unknown) => {
      assert.ok(isToolgateError(err, 'ERR_FILE_UNREADABLE'))
      assert.match(err.message, /provider "k8s"/)
      return true
    },
  )
})
