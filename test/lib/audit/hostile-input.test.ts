/**
 * What a hostile client sends the audit trail and the metrics (issue 35): a flood of distinct tool
 * names (the metrics' series stay bounded), an enormous batch (records stay bounded), names and
 * arguments built to be huge or deep, forged trace headers. Nothing grows without end, nothing
 * breaks the record.
 */
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {describe, it} from 'node:test'
import {mcpEventsOf, redactionPattern} from '../../../src/lib/audit/mcp-events.ts'
import {auditFacts} from '../../../src/lib/audit/request-facts.ts'
import {ProxyMetrics} from '../../../src/lib/metrics/proxy-metrics.ts'

const args = {include: true, redact: redactionPattern()}

describe('hostile input to the audit trail and the metrics', () => {
  it('10,000 distinct tool names and methods do not grow the metrics without end', async () => {
    const metrics = new ProxyMetrics()
    for (let i = 0; i < 10_000; i++) {
      const body = Buffer.from(
        JSON.stringify({
          jsonrpc: '2.0',
          id: i,
          method: i % 2 ? 'tools/call' : `x/${i}`,
          params: {name: `t${i}`},
        }),
      )
      const facts = {...auditFacts({method: 'POST', headers: {}} as never), body}
      metrics.request(facts, {outcome: 'success', status: 200, durationMs: 1})
    }
    const text = await metrics.registry.render()
    const series = text.split('\n').filter((l) => l.startsWith('toolgate_mcp_messages_total{'))
    assert.ok(series.length <= 202, `${series.length} series`)
    assert.ok(series.some((l) => l.includes('tool="other"')))
    assert.ok(series.some((l) => l.includes('method="other"')))
  })

  it('a batch of 50,000 messages gives at most 100 records; huge names are cut', () => {
    const batch = Array.from({length: 50_000}, (_, i) => ({
      jsonrpc: '2.0',
      id: i,
      method: 'tools/call',
      params: {name: i === 0 ? 'n'.repeat(1_000_000) : `t${i}`},
    }))
    const events = mcpEventsOf('POST', Buffer.from(JSON.stringify(batch)), args)
    assert.equal(events.length, 100)
    assert.equal(events[0]!.name!.length, 500)
  })

  it('arguments nested 2,000 deep or 1 MB long are bounded, secrets redacted at any depth', () => {
    let deep: unknown = {password: 'p'}
    for (let i = 0; i < 2_000; i++) deep = {a: deep}
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {name: 't', arguments: {deep, long: 'x'.repeat(1_000_000), nested: {apiKey: 'k'}}},
    })
    const [e] = mcpEventsOf('POST', Buffer.from(body), args)
    const text = JSON.stringify(e!.args)
    assert.ok(text.length < 10_000, `${text.length} bytes`)
    assert.ok(!text.includes('"k"') && text.includes('[redacted]'))
  })

  it('garbage bodies and forged trace headers are recorded as what they are', () => {
    assert.deepEqual(mcpEventsOf('POST', Buffer.from('{not json'), args), [
      {event: 'mcp_request', method: 'unparsable'},
    ])
    assert.deepEqual(
      mcpEventsOf('POST', Buffer.from('[1, null, "x"]'), args).map((e) => e.event),
      ['mcp_response', 'mcp_response', 'mcp_response'],
    )
    const trace = (traceparent: string) =>
      auditFacts({method: 'POST', headers: {traceparent}} as never).traceId
    assert.equal(trace(`00-${'ab'.repeat(16)}-${'cd'.repeat(8)}-01`), 'ab'.repeat(16))
    for (const forged of [
      `00-${'0'.repeat(32)}-${'cd'.repeat(8)}-01`,
      `00-${'AB'.repeat(16)}-${'cd'.repeat(8)}-01`,
      `00-${'ab'.repeat(16)}-${'cd'.repeat(8)}-01\r\nx: y`,
      'x'.repeat(10_000),
    ])
      assert.equal(trace(forged), undefined, forged.slice(0, 40))
  })
})

describe('a syslog receiver that is away', () => {
  it('records wait in a bounded queue; past it every one is dropped and counted', async () => {
    const {SyslogSink} = await import('../../../src/lib/audit/syslog-sink.ts')
    const {freePort} = await import('../../helpers/mcp-upstream.ts')
    const sink = new SyslogSink({kind: 'tcp', host: '127.0.0.1', port: await freePort()})
    let reported = 0
    sink.onDrop = () => reported++
    for (let i = 0; i < 5_000; i++) sink.write({event: 'mcp_tool_call', outcome: 'success', n: i})
    sink.close()
    assert.equal(sink.dropped, 5_000 - 4_096)
    assert.equal(reported, sink.dropped, 'each drop reaches the auditor, which counts it')
  })
})

describe('a flood of requests between two batches', () => {
  const logger = {error() {}, warn() {}, info() {}, debug() {}} as never
  const facts = (body: Buffer) => ({...auditFacts({method: 'POST', headers: {}} as never), body})
  const ok = {outcome: 'success', status: 200, durationMs: 1} as const

  it('is written at once past 512 requests or 256 KiB of bodies, not held for the next batch', async () => {
    const {Auditor} = await import('../../../src/lib/audit/auditor.ts')
    const dir = mkdtempSync(join(tmpdir(), 'toolgate-audit-flood-'))
    try {
      const log = join(dir, 'audit.log')
      const auditor = new Auditor({log, workload: 'w', target: 't'}, logger)
      const call = Buffer.from(
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}',
      )
      for (let i = 0; i < 511; i++) auditor.request(facts(call), ok)
      assert.equal(readFileSync(log, 'utf8'), '', 'below the bound, the batch waits for its timer')
      auditor.request(facts(call), ok)
      assert.equal(readFileSync(log, 'utf8').trim().split('\n').length, 512)
      // Three 100 KiB bodies: the third passes 256 KiB, and everything held is written.
      const big = Buffer.alloc(100 * 1024, 32)
      for (let k = 0; k < 2; k++) auditor.request(facts(big), ok)
      assert.equal(readFileSync(log, 'utf8').trim().split('\n').length, 512)
      auditor.request(facts(big), ok)
      assert.equal(readFileSync(log, 'utf8').trim().split('\n').length, 515)
      await auditor.close()
    } finally {
      rmSync(dir, {recursive: true, force: true})
    }
  })

  it('a lone request is written by its batch timer, while the auditor runs', async () => {
    const {Auditor} = await import('../../../src/lib/audit/auditor.ts')
    const {FLUSH_MS} = await import('../../../src/lib/audit/file-sink.ts')
    const dir = mkdtempSync(join(tmpdir(), 'toolgate-audit-timer-'))
    try {
      const log = join(dir, 'audit.log')
      const auditor = new Auditor({log, workload: 'w', target: 't'}, logger)
      auditor.request(facts(Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping"}')), ok)
      assert.equal(readFileSync(log, 'utf8'), '')
      await new Promise((r) => setTimeout(r, FLUSH_MS * 5))
      assert.match(readFileSync(log, 'utf8'), /"method":"ping"/)
      await auditor.close()
    } finally {
      rmSync(dir, {recursive: true, force: true})
    }
  })

  it('is written when the process exits, however it exits (short of SIGKILL)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolgate-audit-exit-'))
    try {
      const log = join(dir, 'audit.log')
      const script = `
        const {Auditor} = await import(${JSON.stringify(new URL('../../../src/lib/audit/auditor.ts', import.meta.url).href)})
        const {auditFacts} = await import(${JSON.stringify(new URL('../../../src/lib/audit/request-facts.ts', import.meta.url).href)})
        const logger = {error() {}, warn() {}, info() {}, debug() {}}
        const a = new Auditor({log: ${JSON.stringify(log)}, workload: 'w', target: 't'}, logger)
        const f = {...auditFacts({method: 'POST', headers: {}}), body: Buffer.from('{"jsonrpc":"2.0","id":7,"method":"ping"}')}
        a.request(f, {outcome: 'success', status: 200, durationMs: 1})
        process.exit(3)`
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        encoding: 'utf8',
      })
      assert.equal(r.status, 3, r.stderr)
      assert.match(readFileSync(log, 'utf8'), /"method":"ping".*"jsonrpcId":7/)
    } finally {
      rmSync(dir, {recursive: true, force: true})
    }
  })

  it('the metrics count what waits when scraped', async () => {
    const metrics = new ProxyMetrics()
    const call = Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}')
    const counted = async () => {
      const text = await metrics.registry.render()
      return Number(/toolgate_mcp_messages_total\{[^}]*\} (\d+)/.exec(text)?.[1] ?? 0)
    }
    for (let i = 0; i < 3; i++) metrics.request(facts(call), ok)
    assert.equal(await counted(), 3, 'a scrape counts the requests still waiting')
  })
})
