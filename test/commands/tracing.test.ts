/**
 * OpenTelemetry tracing (issue 35): `proxy --otel-endpoint` sends its spans with the official SDK's
 * OTLP/HTTP exporter to a receiver in the test. The request span continues the client's W3C
 * `traceparent`; incoming authentication (a real oidc-provider) and the upstream call are its
 * children; the upstream (a recording server) sees the same trace id, parented on the upstream span.
 */
import assert from 'node:assert/strict'
import {randomBytes} from 'node:crypto'
import {createServer, type Server} from 'node:http'
import {mkdtemp, rm} from 'node:fs/promises'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {setTimeout as sleep} from 'node:timers/promises'
import {startRecordingUpstream, type RecordingUpstream} from '../helpers/mcp-upstream.ts'
import {startOidcProvider, type OidcProviderFixture} from '../helpers/oidc-provider.ts'
import {runCli, stop, waitFor} from '../helpers/proxy-run.ts'

interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
}

describe('OpenTelemetry traces of the proxy', () => {
  let home: string
  let idp: OidcProviderFixture
  let upstream: RecordingUpstream
  let receiver: Server
  const spans: OtlpSpan[] = []

  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'toolgate-otel-'))
    idp = await startOidcProvider()
    upstream = await startRecordingUpstream()
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        if (req.url === '/v1/traces') {
          const body = JSON.parse(Buffer.concat(chunks).toString()) as {
            resourceSpans: {scopeSpans: {spans: OtlpSpan[]}[]}[]
          }
          for (const rs of body.resourceSpans)
            for (const ss of rs.scopeSpans) spans.push(...ss.spans)
        }
        res.writeHead(200, {'content-type': 'application/json'}).end('{}')
      })
    })
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r))
  })
  after(async () => {
    receiver?.close()
    await upstream?.close()
    await idp?.close()
    await rm(home, {recursive: true, force: true})
  })

  it('a span per request, continued from the client, with children; the upstream sees the trace', async () => {
    const collector = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`
    const proxy = runCli(
      [
        'proxy',
        'traced',
        '--target-uri',
        upstream.url,
        '--oidc-issuer',
        idp.issuer,
        '--oidc-audience',
        idp.audience,
        '--otel-endpoint',
        collector,
        '--json',
      ],
      home,
    )
    try {
      const line = await waitFor(
        'listening',
        () =>
          proxy
            .stdout()
            .split('\n')
            .find((l) => l.startsWith('{')),
        proxy,
      )
      const {clientUrl} = JSON.parse(line) as {clientUrl: string}
      const traceId = randomBytes(16).toString('hex')
      const clientSpan = randomBytes(8).toString('hex')
      const res = await fetch(clientUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${await idp.issueAccessToken({sub: 'alice'})}`,
          traceparent: `00-${traceId}-${clientSpan}-01`,
        },
        body: JSON.stringify({jsonrpc: '2.0', id: 1, method: 'tools/list', params: {}}),
      })
      assert.equal(res.status, 200)
      await res.text()
      for (const end = Date.now() + 20_000; Date.now() < end; await sleep(200))
        if (spans.filter((s) => s.traceId === traceId).length >= 3) break
      const mine = spans.filter((s) => s.traceId === traceId)
      const server = mine.find((s) => s.parentSpanId === clientSpan)
      assert.ok(server, `a server span continues the client's: ${JSON.stringify(mine)}`)
      assert.equal(server.kind, 2) // SERVER
      const children = mine.filter((s) => s.parentSpanId === server.spanId).map((s) => s.name)
      assert.deepEqual(children.sort(), ['incoming auth', 'upstream'])
      const up = mine.find((s) => s.name === 'upstream')!
      assert.equal(up.kind, 3) // CLIENT
      const seen = upstream.requests.at(-1)!.headers.traceparent
      assert.equal(seen, `00-${traceId}-${up.spanId}-01`, 'the upstream continues the same trace')
    } finally {
      await stop(proxy)
    }
  })
})
