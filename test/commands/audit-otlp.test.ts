/**
 * Audit records as OpenTelemetry logs (issue 35): `run --audit-log otlp --otel-endpoint URL` sends
 * each record through the official SDK's OTLP/HTTP exporter to a receiver in the test — the event
 * as the body, the record's fields as attributes, failures at WARN. A collector that is away never
 * holds traffic up: the lost records are counted on /metrics and the loss is logged once.
 */
import assert from 'node:assert/strict'
import {createServer, type Server} from 'node:http'
import {mkdtemp, rm} from 'node:fs/promises'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {setTimeout as sleep} from 'node:timers/promises'
import {freePort} from '../helpers/mcp-upstream.ts'
import {runCli} from '../helpers/proxy-run.ts'
import {mcpClient, runForeground, textOf, UNRULY} from '../helpers/workload.ts'

interface OtlpLog {
  severityText: string
  body: {stringValue: string}
  attributes: {key: string; value: {stringValue?: string; intValue?: string | number}}[]
}

describe('audit records to an OTLP collector', () => {
  let home: string
  let receiver: Server
  const logs: OtlpLog[] = []
  let collector: string

  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'toolgate-audit-otlp-'))
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        if (req.url === '/v1/logs') {
          const body = JSON.parse(Buffer.concat(chunks).toString()) as {
            resourceLogs: {scopeLogs: {logRecords: OtlpLog[]}[]}[]
          }
          for (const rl of body.resourceLogs)
            for (const sl of rl.scopeLogs) logs.push(...sl.logRecords)
        }
        res.writeHead(200, {'content-type': 'application/json'}).end('{}')
      })
    })
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r))
    collector = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`
  })
  after(async () => {
    receiver?.close()
    await rm(home, {recursive: true, force: true})
  })

  const attr = (log: OtlpLog, key: string) => {
    const v = log.attributes.find((a) => a.key === key)?.value
    return v?.stringValue ?? (v?.intValue !== undefined ? Number(v.intValue) : undefined)
  }

  it('each MCP message arrives as a log record with its fields as attributes', async () => {
    const w = await runForeground(
      'otlp-audit',
      ['--audit-log', 'otlp', '--otel-endpoint', collector],
      UNRULY,
      home,
    )
    try {
      const c = await mcpClient(w.url)
      assert.match(textOf(await c.callTool({name: 'env', arguments: {name: 'HOME'}})), /./)
      await c.close()
    } finally {
      await w.stop()
    }
    // Stopping flushes what waits; the exporter batches every second otherwise.
    for (let i = 0; i < 50 && !logs.some((l) => l.body.stringValue === 'mcp_tool_call'); i++)
      await sleep(100)
    const call = logs.find((l) => l.body.stringValue === 'mcp_tool_call')
    assert.ok(call, `a tool call record; got ${logs.map((l) => l.body.stringValue).join(', ')}`)
    assert.equal(call.severityText, 'INFO')
    assert.equal(attr(call, 'method'), 'tools/call')
    assert.equal(attr(call, 'name'), 'env')
    assert.equal(attr(call, 'workload'), 'otlp-audit')
    assert.equal(attr(call, 'status'), 200)
    assert.ok(logs.some((l) => l.body.stringValue === 'mcp_initialize'))
  })

  it('a collector that is away: traffic flows, losses are counted and logged', async () => {
    const away = `http://127.0.0.1:${await freePort()}`
    const internal = await freePort()
    const w = await runForeground(
      'otlp-away',
      [
        '--audit-log',
        'otlp',
        '--otel-endpoint',
        away,
        '--internal-address',
        `127.0.0.1:${internal}`,
      ],
      UNRULY,
      home,
    )
    try {
      const c = await mcpClient(w.url)
      for (let i = 0; i < 3; i++) await c.callTool({name: 'env', arguments: {name: 'HOME'}})
      await c.close()
      let dropped = 0
      for (let i = 0; i < 60 && dropped === 0; i++) {
        await sleep(250)
        const m = await (await fetch(`http://127.0.0.1:${internal}/metrics`)).text()
        dropped = Number(/^toolgate_audit_records_dropped_total (\d+)/m.exec(m)?.[1] ?? 0)
      }
      assert.ok(dropped >= 3, `dropped ${dropped}`)
      assert.match(w.run.stderr(), /audit record not written \(counted as dropped from now on\)/)
    } finally {
      await w.stop()
    }
  })

  it('without a collector configured, run refuses before starting anything', async () => {
    const r = runCli(['run', 'no-collector', '--audit-log', 'otlp', '--', ...UNRULY], home, {
      OTEL_EXPORTER_OTLP_ENDPOINT: '',
    })
    assert.equal(await r.exited, 2)
    assert.match(
      r.stderr(),
      /--audit-log otlp: no collector; pass --otel-endpoint URL or set OTEL_EXPORTER_OTLP_ENDPOINT/,
    )
  })
})
