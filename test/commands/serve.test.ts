/**
 * `toolgate serve` end to end in anonymous mode over the fixture registry: every route, every bad
 * parameter of issue 2, the internal server, and that the main port keeps serving after bad input.
 */
import {after, before, describe, test} from 'node:test'
import assert from 'node:assert/strict'
import {join} from 'node:path'
import {
  FIXTURES,
  getJson,
  rawRequest,
  startServe,
  type ServeProcess,
} from '../helpers/serve-process.ts'

const OFFICIAL = 'io.modelcontextprotocol.registry/official'
type Entry = {
  server: {name: string; version: string}
  _meta: Record<string, {isLatest: boolean; status: string; publishedAt: string; updatedAt: string}>
}
type List = {servers: Entry[]; metadata: {count: number; nextCursor?: string}}

let s: ServeProcess
const api = '/registry/default/v0.1'
const seenHeaders: Headers[] = []

async function get(path: string, init?: RequestInit) {
  const r = await getJson(s.url + path, init)
  seenHeaders.push(r.headers)
  return r
}

before(async () => {
  s = await startServe(['--config', join(FIXTURES, 'anonymous.yaml')])
})
after(async () => {
  await s?.stop()
})

describe('list servers', () => {
  test('the first page holds every fixture version ordered by name then version, without nextCursor', async () => {
    const r = await get(`${api}/servers`)
    assert.equal(r.status, 200)
    assert.equal(r.headers.get('content-type'), 'application/json')
    const body = r.body as List
    assert.deepEqual(Object.keys(body), ['servers', 'metadata'])
    assert.equal(body.metadata.count, 11)
    assert.equal(body.servers.length, 11)
    assert.ok(!('nextCursor' in body.metadata))
    const keys = body.servers.map((e) => `${e.server.name}@${e.server.version}`)
    assert.equal(keys[0], 'com.acme/search@3.2.1')
    const names = body.servers.map((e) => e.server.name)
    assert.deepEqual(names, [...names].sort())
    for (const e of body.servers) {
      assert.deepEqual(Object.keys(e), ['server', '_meta'])
      const meta = e._meta[OFFICIAL]!
      assert.equal(meta.status, 'active')
      assert.ok(
        !Number.isNaN(Date.parse(meta.publishedAt)) && !Number.isNaN(Date.parse(meta.updatedAt)),
      )
      assert.equal(typeof meta.isLatest, 'boolean')
    }
  })

  test('keyset pages of 3 cover every version exactly once and the last page has no nextCursor', async () => {
    const seen: string[] = []
    let cursor: string | undefined
    let pages = 0
    do {
      const r = await get(
        `${api}/servers?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      )
      assert.equal(r.status, 200)
      const body = r.body as List
      assert.equal(body.metadata.count, body.servers.length)
      seen.push(...body.servers.map((e) => `${e.server.name}@${e.server.version}`))
      cursor = body.metadata.nextCursor
      pages++
    } while (cursor && pages < 10)
    assert.equal(pages, 4)
    assert.equal(seen.length, 11)
    assert.equal(new Set(seen).size, 11)
  })

  test('search is a case-insensitive substring of name, title or description', async () => {
    const names = async (q: string) =>
      ((await get(`${api}/servers?search=${q}`)).body as List).servers.map((e) => e.server.name)
    assert.deepEqual(
      new Set(await names('CALENDAR')),
      new Set(['io.example/calendar', 'io.example/legacy']),
    )
    assert.deepEqual(await names('acme%20search'), ['com.acme/search'])
    assert.deepEqual(await names('markdown'), ['io.github.alice/notes'])
    assert.deepEqual(await names('no-such-thing'), [])
  })

  test('version=latest gives one latest version per server; an exact version filters', async () => {
    const latest = (await get(`${api}/servers?version=latest`)).body as List
    assert.equal(latest.servers.length, 6)
    assert.ok(latest.servers.every((e) => e._meta[OFFICIAL]!.isLatest))
    const weather = latest.servers.find((e) => e.server.name === 'io.example/weather')
    assert.equal(weather?.server.version, '2.0.0')
    const exact = (await get(`${api}/servers?version=1.0.0`)).body as List
    assert.deepEqual(exact.servers.map((e) => e.server.name).sort(), [
      'io.example/calendar',
      'io.example/weather',
      'io.github.alice/notes',
      'org.sample/db-tool',
    ])
  })

  test('updated_since keeps only versions updated strictly after the instant', async () => {
    const past = (await get(`${api}/servers?updated_since=2000-01-01T00:00:00Z`)).body as List
    assert.equal(past.servers.length, 11)
    const future = (await get(`${api}/servers?updated_since=2999-01-01T00:00:00%2B02:00`))
      .body as List
    assert.deepEqual(future, {servers: [], metadata: {count: 0}})
  })
})

describe('versions of one server', () => {
  test('lists every version of a URL-encoded server name', async () => {
    const r = await get(`${api}/servers/io.example%2Fweather/versions`)
    assert.equal(r.status, 200)
    const body = r.body as List
    assert.deepEqual(
      body.servers.map((e) => e.server.version),
      ['1.0.0', '1.1.0', '2.0.0'],
    )
    assert.equal(body.metadata.count, 3)
    assert.deepEqual(
      body.servers.map((e) => e._meta[OFFICIAL]!.isLatest),
      [false, false, true],
    )
  })

  test('returns one version as {server, _meta}, exact or latest', async () => {
    const r = await get(`${api}/servers/io.example%2Fweather/versions/1.1.0`)
    assert.equal(r.status, 200)
    const body = r.body as Entry
    assert.deepEqual(Object.keys(body), ['server', '_meta'])
    assert.equal(body.server.version, '1.1.0')
    assert.equal(body._meta[OFFICIAL]!.isLatest, false)
    const latest = (await get(`${api}/servers/org.sample%2Fdb-tool/versions/latest`)).body as Entry
    assert.equal(latest.server.version, '1.0.0', 'a release beats its pre-release')
    const calver = (await get(`${api}/servers/io.example%2Flegacy/versions/latest`)).body as Entry
    assert.equal(calver.server.version, '2024.02')
  })

  test('unknown server or version is 404 not found', async () => {
    for (const path of [
      `${api}/servers/io.example%2Fnope/versions`,
      `${api}/servers/io.example%2Fnope/versions/1.0.0`,
      `${api}/servers/io.example%2Fweather/versions/9.9.9`,
    ]) {
      const r = await get(path)
      assert.equal(r.status, 404, path)
      assert.deepEqual(r.body, {error: 'not found'})
    }
  })
})

describe('bad input gets a clear error and the server keeps serving', () => {
  const BAD: [string, number, RegExp][] = [
    [`${api}/servers?limit=0`, 400, /^limit: /],
    [`${api}/servers?limit=-1`, 400, /^limit: /],
    [`${api}/servers?limit=abc`, 400, /^limit: /],
    [`${api}/servers?limit=101`, 400, /^limit: /],
    [`${api}/servers?cursor=WyJpby5leGFtcGxlL2NhbGVuZGFyIiwiMC45LjAiXX`, 400, /^cursor: /],
    [`${api}/servers?cursor=not%20a%20cursor`, 400, /^cursor: /],
    [`${api}/servers?updated_since=yesterday`, 400, /^updated_since: /],
    [`${api}/servers/a%2Fb%2Fc/versions`, 400, /^serverName: /],
    [`${api}/servers/io.example%2Fwea%20ther/versions`, 400, /^serverName: /],
    [`${api}/servers/io.example%2F${'w'.repeat(190)}/versions`, 400, /^serverName: .*201/],
    [`${api}/servers/%2e%2e/versions`, 400, /^path: dot segments are not allowed$/],
    [`${api}/servers/%2e%2e%2F%2e%2e/versions/1.0.0`, 400, /^serverName: /],
    ['/registry/nope/v0.1/servers', 404, /^registry not found$/],
    ['/registry/nope/v0.1/servers/io.example%2Fweather/versions', 404, /^registry not found$/],
    [
      '/registry/nope/v0.1/servers/io.example%2Fweather/versions/latest',
      404,
      /^registry not found$/,
    ],
    ['/registry/Bad_Name/v0.1/servers', 404, /^registry not found$/],
    ['/nothing-here', 404, /^not found$/],
  ]
  for (const [path, status, message] of BAD) {
    test(`${path.slice(0, 90)} → ${status}`, async () => {
      // Sent raw: fetch would resolve %2e%2e before the server ever saw it.
      const r = await rawRequest(s.url, path)
      assert.equal(r.status, status, r.text)
      assert.equal(r.headers['content-type'], 'application/json')
      assert.equal(r.headers['x-content-type-options'], 'nosniff')
      const body = r.body as {error: string}
      assert.deepEqual(Object.keys(body), ['error'])
      assert.match(body.error, message)
    })
  }

  test('a tampered cursor of a real page is refused', async () => {
    const first = (await get(`${api}/servers?limit=2`)).body as List
    const cursor = first.metadata.nextCursor!
    const tampered = Buffer.from(JSON.stringify(['../../etc', '1'])).toString('base64url')
    for (const c of [cursor.slice(0, -2), tampered, cursor + '%3D']) {
      const r = await get(`${api}/servers?limit=2&cursor=${c}`)
      assert.equal(r.status, 400, c)
      assert.match((r.body as {error: string}).error, /^cursor: /)
    }
  })

  test('after all that bad input the server still answers', async () => {
    assert.equal((await get(`${api}/servers?limit=1`)).status, 200)
  })

  test('wrong methods are 405 with Allow', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      for (const path of [
        `${api}/servers`,
        `${api}/servers/io.example%2Fweather/versions/1.0.0`,
        '/openapi.json',
      ]) {
        const r = await get(path, {method})
        assert.equal(r.status, 405, `${method} ${path}`)
        assert.equal(r.headers.get('allow'), 'GET, HEAD')
        assert.deepEqual(r.body, {error: 'method not allowed'})
      }
    }
  })

  test('HEAD answers like GET without a body', async () => {
    const r = await get(`${api}/servers`, {method: 'HEAD'})
    assert.equal(r.status, 200)
    assert.equal(r.text, '')
  })
})

describe('public documents', () => {
  test('GET /openapi.json is an OpenAPI 3.1 document describing every route', async () => {
    const r = await get('/openapi.json')
    assert.equal(r.status, 200)
    const doc = r.body as {
      openapi: string
      paths: Record<
        string,
        {get: {parameters?: {name: string}[]; responses: Record<string, unknown>}}
      >
      components: {securitySchemes: Record<string, {type: string; scheme: string}>}
    }
    assert.match(doc.openapi, /^3\.1\./)
    assert.deepEqual(Object.keys(doc.paths).sort(), [
      '/.well-known/oauth-protected-resource',
      '/openapi.json',
      '/registry/{registry}/v0.1/publish',
      '/registry/{registry}/v0.1/servers',
      '/registry/{registry}/v0.1/servers/{serverName}/versions',
      '/registry/{registry}/v0.1/servers/{serverName}/versions/{version}',
      '/registry/{registry}/v0.1/servers/{serverName}/versions/{version}/status',
    ])
    const list = doc.paths['/registry/{registry}/v0.1/servers']!.get
    assert.deepEqual(
      list.parameters!.map((p) => p.name),
      [
        'registry',
        'cursor',
        'limit',
        'search',
        'updated_since',
        'version',
        'transport',
        'type',
        'registryType',
      ],
    )
    assert.ok(list.responses['200'] && list.responses['400'] && list.responses['404'])
    assert.deepEqual(doc.components.securitySchemes.bearerAuth, {
      ...doc.components.securitySchemes.bearerAuth,
      type: 'http',
      scheme: 'bearer',
    })
  })

  test('the protected-resource metadata is 404 in anonymous mode', async () => {
    const r = await get('/.well-known/oauth-protected-resource')
    assert.equal(r.status, 404)
  })
})

describe('internal server', () => {
  test('health, readiness, version and metrics are not served on the main port', async () => {
    for (const path of ['/health', '/readiness', '/version', '/metrics']) {
      const r = await get(path)
      assert.equal(r.status, 404, path)
      assert.deepEqual(r.body, {error: 'not found'})
    }
  })

  test('/health, /readiness and /version answer with the contract bodies', async () => {
    assert.deepEqual((await getJson(s.internalUrl + '/health')).body, {status: 'healthy'})
    const ready = await getJson(s.internalUrl + '/readiness')
    assert.equal(ready.status, 200)
    assert.deepEqual(ready.body, {status: 'ready'})
    const v = await getJson(s.internalUrl + '/version')
    assert.deepEqual(Object.keys(v.body as object).sort(), [
      'build_date',
      'commit',
      'node_version',
      'platform',
      'version',
    ])
    assert.equal(v.headers.get('x-content-type-options'), 'nosniff')
    assert.equal((await getJson(s.internalUrl + '/registry/default/v0.1/servers')).status, 404)
  })

  test('/metrics is Prometheus text with requests by route and status, sources, stored versions and memory', async () => {
    await get(`${api}/servers?limit=0`)
    const r = await fetch(s.internalUrl + '/metrics')
    assert.equal(r.status, 200)
    assert.match(r.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/)
    const text = await r.text()
    assert.match(
      text,
      /^toolgate_http_requests_total\{route="list_servers",status="200"\} [1-9]\d*$/m,
    )
    assert.match(
      text,
      /^toolgate_http_requests_total\{route="list_servers",status="400"\} [1-9]\d*$/m,
    )
    assert.match(
      text,
      /^toolgate_http_request_duration_seconds_bucket\{route="list_servers",status="200",le="\+Inf"\} [1-9]\d*$/m,
    )
    assert.match(text, /^toolgate_source_syncs_total\{source="fixture"\} 1$/m)
    assert.match(text, /^toolgate_source_sync_errors_total\{source="fixture"\} 0$/m)
    assert.match(
      text,
      /^toolgate_source_last_success_timestamp_seconds\{source="fixture"\} \d+(\.\d+)?$/m,
    )
    assert.match(text, /^toolgate_registry_stored_versions 11$/m)
    assert.match(text, /^process_resident_memory_bytes \d+$/m)
  })
})

test('every response carried X-Content-Type-Options: nosniff', () => {
  assert.ok(seenHeaders.length > 30)
  for (const h of seenHeaders) assert.equal(h.get('x-content-type-options'), 'nosniff')
})
