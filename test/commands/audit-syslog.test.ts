/**
 * Audit records to syslog (issue 35): a real rsyslog started by the test receives them over TCP,
 * UDP and a unix stream socket as RFC 5424 messages (facility 13 "log audit", severity info or
 * notice, the event as MSGID, the record as JSON). A receiver that is away does not stop
 * traffic: records wait in a bounded queue and arrive once it is up.
 */
import assert from 'node:assert/strict'
import {spawn, type ChildProcess} from 'node:child_process'
import {existsSync, readFileSync, writeFileSync} from 'node:fs'
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {setTimeout as sleep} from 'node:timers/promises'
import {needs} from '../helpers/component.ts'
import {freePort} from '../helpers/mcp-upstream.ts'
import {mcpClient, runForeground, textOf, UNRULY} from '../helpers/workload.ts'

const RSYSLOGD = '/usr/sbin/rsyslogd'
const skip = needs(
  'rsyslog (Debian rsyslog)',
  existsSync(RSYSLOGD) ? false : 'not installed (apt-get install rsyslog)',
)

describe('audit to a real rsyslog', {skip}, () => {
  let home: string
  let rsyslog: ChildProcess | undefined
  const ports = {tcp: 0, udp: 0}
  const out = () => join(home, 'received.log')
  const sock = () => join(home, 'audit.sock')

  function startRsyslog(): Promise<void> {
    writeFileSync(
      join(home, 'rsyslog.conf'),
      [
        `global(workDirectory="${home}")`,
        'module(load="imtcp")',
        'module(load="imudp")',
        'module(load="imptcp")',
        `input(type="imtcp" port="${ports.tcp}" address="127.0.0.1")`,
        `input(type="imudp" port="${ports.udp}" address="127.0.0.1")`,
        `input(type="imptcp" path="${sock()}" unlink="on")`,
        'template(name="raw" type="string" string="%inputname% %syslogfacility% %syslogseverity% %app-name% %msgid% %msg%\\n")',
        `*.* action(type="omfile" file="${out()}" template="raw")`,
      ].join('\n'),
    )
    rsyslog = spawn(
      RSYSLOGD,
      ['-n', '-f', join(home, 'rsyslog.conf'), '-i', join(home, 'rsyslog.pid')],
      {
        stdio: 'ignore',
      },
    )
    return sleep(1_500)
  }
  const received = () => (existsSync(out()) ? readFileSync(out(), 'utf8').trim().split('\n') : [])
  async function until(what: string, check: () => boolean, ms = 30_000) {
    for (const end = Date.now() + ms; Date.now() < end; await sleep(200)) if (check()) return
    assert.fail(`${what}; received:\n${received().join('\n')}`)
  }

  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'toolgate-syslog-'))
    ports.tcp = await freePort()
    ports.udp = await freePort()
  })
  after(async () => {
    rsyslog?.kill('SIGKILL')
    await rm(home, {recursive: true, force: true})
  })

  it('records wait while the receiver is away, then arrive; traffic never waits', async () => {
    const w = await runForeground(
      'sys-tcp',
      ['--audit-log', `tcp://127.0.0.1:${ports.tcp}`],
      UNRULY,
      home,
    )
    try {
      const client = await mcpClient(w.url)
      assert.equal(
        textOf(await client.callTool({name: 'echo', arguments: {message: 'early'}})),
        'echo: early',
      )
      await client.close()
      await startRsyslog()
      await until('the queued records arrive', () =>
        received().some((l) => l.includes('"name":"echo"')),
      )
      const call = received().find((l) => l.includes('mcp_tool_call'))!
      assert.match(call, /^imtcp 13 6 toolgate-sys-tcp mcp_tool_call \{"time":/)
      assert.equal(JSON.parse(call.slice(call.indexOf('{'))).workload, 'sys-tcp')
    } finally {
      await w.stop()
    }
  })

  for (const transport of ['udp', 'unix'] as const) {
    it(`over ${transport}`, async () => {
      const target = transport === 'udp' ? `udp://127.0.0.1:${ports.udp}` : `unix:${sock()}`
      const w = await runForeground(`sys-${transport}`, ['--audit-log', target], UNRULY, home)
      try {
        const client = await mcpClient(w.url)
        await client.callTool({name: 'echo', arguments: {message: transport}})
        await client.close()
        const input = transport === 'udp' ? 'imudp' : 'imptcp'
        await until(`a ${transport} record`, () =>
          received().some((l) =>
            l.startsWith(`${input} 13 6 toolgate-sys-${transport} mcp_tool_call`),
          ),
        )
      } finally {
        await w.stop()
      }
    })
  }

  it('a bad syslog URL is refused before anything starts', async () => {
    const {runCli} = await import('../helpers/proxy-run.ts')
    const r = runCli(['run', 'bad', '--audit-log', 'http://127.0.0.1:1/', '--', ...UNRULY], home)
    assert.equal(await r.exited, 2)
    assert.match(
      r.stderr(),
      /--audit-log http:\/\/127\.0\.0\.1:1\/: use udp:\/\/host:port, tcp:\/\/host:port or unix:\/path/,
    )
  })
})
