/**
 * Metrics of `run` and `proxy` (issue 35): a real Prometheus (Debian's `prometheus`) scrapes the
 * `--internal-address` of a workload and of a proxy in front of it; `promtool check metrics`
 * accepts what they serve; the counters say what the MCP client did.
 */
import assert from 'node:assert/strict'
import {spawn, spawnSync, type ChildProcess} from 'node:child_process'
import {existsSync, writeFileSync} from 'node:fs'
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {setTimeout as sleep} from 'node:timers/promises'
import {needs} from '../helpers/component.ts'
import {freePort} from '../helpers/mcp-upstream.ts'
import {runCli, stop, waitFor, type Run} from '../helpers/proxy-run.ts'
import {mcpClient, textOf, UNRULY} from '../helpers/workload.ts'

const skip = needs(
  'prometheus and promtool (Debian prometheus)',
  existsSync('/usr/bin/prometheus') && existsSync('/usr/bin/promtool')
    ? false
    : 'not installed (apt-get install prometheus)',
)

describe('metrics scraped by a real Prometheus', {skip}, () => {
  let home: string
  let prom: ChildProcess | undefined
  let proxy: Run | undefined
  const ports = {run: 0, proxy: 0, prom: 0}

  async function cli(argv: string[]) {
    const r = runCli(argv, home)
    const code = await r.exited
    return {code, stdout: r.stdout(), stderr: r.stderr()}
  }
  async function query(
    q: string,
  ): Promise<{metric: Record<string, string>; value: [number, string]}[]> {
    const res = await fetch(
      `http://127.0.0.1:${ports.prom}/api/v1/query?query=${encodeURIComponent(q)}`,
    )
    return ((await res.json()) as {data: {result: never[]}}).data.result
  }

  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'toolgate-metrics-'))
    ports.run = await freePort()
    ports.proxy = await freePort()
    ports.prom = await freePort()
  })
  after(async () => {
    prom?.kill('SIGKILL')
    if (proxy) await stop(proxy)
    await cli(['stop', '--all'])
    await rm(home, {recursive: true, force: true})
  })

  it('run and proxy serve /metrics that promtool accepts and Prometheus scrapes', async () => {
    const run = await cli([
      'run',
      'm',
      '--json',
      '--internal-address',
      `127.0.0.1:${ports.run}`,
      '--',
      ...UNRULY,
    ])
    assert.equal(run.code, 0, run.stderr)
    const {url} = JSON.parse(run.stdout) as {url: string}
    // Its audit goes to a syslog receiver that is not there: traffic flows, and drops are counted.
    const away = await freePort()
    proxy = runCli(
      [
        'proxy',
        'front',
        '--audit-log',
        `tcp://127.0.0.1:${away}`,
        '--target-uri',
        url,
        '--internal-address',
        `127.0.0.1:${ports.proxy}`,
        '--json',
      ],
      home,
    )
    const line = await waitFor(
      'listening',
      () =>
        proxy!
          .stdout()
          .split('\n')
          .find((l) => l.startsWith('{')),
      proxy,
    )
    const {clientUrl} = JSON.parse(line) as {clientUrl: string}

    const client = await mcpClient(clientUrl)
    for (let i = 0; i < 3; i++)
      assert.equal(
        textOf(await client.callTool({name: 'echo', arguments: {message: `m${i}`}})),
        `echo: m${i}`,
      )
    await client.listTools()
    // While the client is connected: one session at the front proxy and at run's bridge, and the
    // one server process run keeps.
    const live = async (port: number) => (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
    const runLive = await live(ports.run)
    assert.match(runLive, /^toolgate_sessions 1$/m)
    assert.match(runLive, /^toolgate_server_processes 1$/m)
    assert.match(await live(ports.proxy), /^toolgate_sessions 1$/m)
    await client.close()

    for (const port of [ports.run, ports.proxy]) {
      assert.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200)
      assert.equal((await fetch(`http://127.0.0.1:${port}/readiness`)).status, 200)
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
      const check = spawnSync('promtool', ['check', 'metrics'], {input: text})
      assert.equal(check.status, 0, `promtool: ${check.stdout}${check.stderr}`)
      assert.match(
        text,
        /toolgate_mcp_messages_total\{event="mcp_tool_call",method="tools\/call",tool="echo",decision="none",code="200"\} 3/,
      )
    }
    // The records wait in the bounded queue (nothing dropped yet), and the count is exposed.
    const proxyMetrics = await (await fetch(`http://127.0.0.1:${ports.proxy}/metrics`)).text()
    assert.match(proxyMetrics, /^toolgate_audit_records_dropped_total 0$/m)
    // The client port never serves them.
    assert.notEqual((await fetch(new URL('/metrics', clientUrl))).status, 200)

    const config = join(home, 'prometheus.yml')
    writeFileSync(
      config,
      [
        'global: {scrape_interval: 1s}',
        'scrape_configs:',
        `  - job_name: run`,
        `    static_configs: [{targets: ['127.0.0.1:${ports.run}']}]`,
        `  - job_name: proxy`,
        `    static_configs: [{targets: ['127.0.0.1:${ports.proxy}']}]`,
      ].join('\n'),
    )
    prom = spawn(
      'prometheus',
      [
        `--config.file=${config}`,
        `--storage.tsdb.path=${join(home, 'tsdb')}`,
        `--web.listen-address=127.0.0.1:${ports.prom}`,
      ],
      {stdio: 'ignore'},
    )
    let calls: number[] = []
    for (const until = Date.now() + 60_000; Date.now() < until; await sleep(500)) {
      const up = await query('up').catch(() => [])
      calls = (
        await query('sum by (job) (toolgate_mcp_messages_total{event="mcp_tool_call"})').catch(
          () => [],
        )
      ).map((r) => Number(r.value[1]))
      if (up.length === 2 && up.every((r) => r.value[1] === '1') && calls.length === 2) break
    }
    assert.deepEqual(calls, [3, 3], 'both jobs scraped, 3 tool calls each')
  })
})
