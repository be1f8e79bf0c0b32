/**
 * One `--json` contract for every command (issue 31, docs/json.md): each line a command prints on
 * stdout is one JSON object with a string `event`, and the command's own event is the one the doc
 * names. `auth token` and `auth explain` need an identity provider: their tests
 * (auth-token.test.ts, auth-explain.test.ts) check the same.
 */
import assert from 'node:assert/strict'
import {writeFileSync} from 'node:fs'
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {runCli, stop, waitFor, type Run} from '../helpers/proxy-run.ts'

const TENANT = [process.execPath, 'test/fixtures/mcp/tenant-server.ts']

let home: string
before(async () => {
  home = await mkdtemp(join(tmpdir(), 'toolgate-json-'))
})
after(() => rm(home, {recursive: true, force: true}))

/** Every stdout line parsed; each must be an object with a string `event`. */
function events(stdout: string): Array<Record<string, unknown> & {event: string}> {
  const lines = stdout.split('\n').filter((l) => l !== '')
  return lines.map((line) => {
    const value = JSON.parse(line) as Record<string, unknown>
    assert.equal(typeof value, 'object', line)
    assert.equal(typeof value.event, 'string', `no event in ${line}`)
    return value as Record<string, unknown> & {event: string}
  })
}

/** `--json` goes before any `--`: what follows `--` is the server's own command line. */
function withJson(argv: string[]): string[] {
  const i = argv.indexOf('--')
  return i === -1 ? [...argv, '--json'] : [...argv.slice(0, i), '--json', ...argv.slice(i)]
}

async function once(argv: string[], input?: string) {
  const r = runCli(withJson(argv), home, {}, input)
  const code = await r.exited
  return {code, stdout: r.stdout(), stderr: r.stderr(), events: events(r.stdout())}
}

/** A long-running command: its first stdout line, then a clean stop. */
async function firstEvent(argv: string[]): Promise<Record<string, unknown> & {event: string}> {
  const r: Run = runCli([...argv, '--json'], home)
  try {
    const line = await waitFor('a JSON line', () => r.stdout().split('\n')[0] || undefined, r)
    return events(line)[0]!
  } finally {
    await stop(r)
  }
}

describe('--json: every stdout line is an object with an event', () => {
  it('version, list, secret set/get/list/delete', async () => {
    assert.deepEqual(
      (await once(['version'])).events.map((e) => e.event),
      ['version'],
    )
    const list = await once(['list'])
    assert.deepEqual(list.events, [{event: 'workloads', workloads: []}])
    const set = await once(['secret', 'set', 'k'], 'v')
    assert.equal(set.code, 0, set.stderr)
    assert.deepEqual(
      set.events.map((e) => e.event),
      ['saved'],
    )
    assert.equal((await once(['secret', 'get', 'k'])).events[0]!.event, 'secret')
    assert.deepEqual((await once(['secret', 'list'])).events, [{event: 'secrets', names: ['k']}])
    assert.equal((await once(['secret', 'delete', 'k'])).events[0]!.event, 'deleted')
  })

  it('run, list, logs, stop, rm', async () => {
    const run = await once(['run', 'j', '--', ...TENANT])
    assert.equal(run.code, 0, run.stderr)
    assert.deepEqual(
      run.events.map((e) => e.event),
      ['running'],
    )
    const list = await once(['list'])
    assert.equal(list.events.length, 1)
    assert.deepEqual(
      (list.events[0]!.workloads as Array<{name: string}>).map((w) => w.name),
      ['j'],
    )
    const add = await once(['client', 'add', 'j', '--client', 'cursor'])
    assert.equal(add.code, 0, add.stderr)
    assert.deepEqual(
      add.events.map((e) => [e.event, e.client, e.change]),
      [['client-entry', 'cursor', 'added']],
    )
    const clients = await once(['client', 'list'])
    assert.deepEqual(
      clients.events.map((e) => e.event),
      ['clients'],
    )
    const logs = await once(['logs', 'j'])
    assert.ok(logs.events.length > 0)
    for (const e of logs.events) assert.equal(e.event, 'line')
    assert.deepEqual(
      (await once(['stop', 'j'])).events.map((e) => e.event),
      ['stopped'],
    )
    assert.deepEqual(
      (await once(['rm', 'j'])).events.map((e) => e.event),
      ['removed', 'client-entries-kept'],
    )
    assert.deepEqual(
      (await once(['client', 'remove', 'j'])).events.map((e) => [e.event, e.change]),
      [['client-entry', 'removed']],
    )
  })

  it('authz lint and authz check', async () => {
    const lint = await once(['authz', 'lint', 'examples/teams-policy.yaml'])
    assert.equal(lint.code, 0, lint.stderr)
    assert.deepEqual(
      lint.events.map((e) => e.event),
      ['lint'],
    )
    const claims = join(home, 'claims.json')
    writeFileSync(claims, JSON.stringify({sub: 'alice', groups: ['team-a']}))
    const check = await once([
      'authz',
      'check',
      '--authz-config',
      'examples/teams-policy.yaml',
      '--claims',
      claims,
      '--method',
      'tools/call',
      '--params',
      '{"name":"echo"}',
    ])
    assert.deepEqual(
      check.events.map((e) => e.event),
      ['decision'],
    )
  })

  it('serve, proxy and proxy tunnel print one listening event', async () => {
    const serve = await firstEvent([
      'serve',
      '--config',
      'examples/anonymous.yaml',
      '--address',
      '127.0.0.1:0',
      '--internal-address',
      '127.0.0.1:0',
    ])
    assert.equal(serve.event, 'listening')
    const proxy = await firstEvent(['proxy', 'p', '--target-uri', 'http://127.0.0.1:9/mcp'])
    assert.equal(proxy.event, 'listening')
    assert.match(String(proxy.clientUrl), /\/mcp$/)
    const tunnel = await firstEvent([
      'proxy',
      'tunnel',
      'http://127.0.0.1:9',
      't',
      '--tunnel-provider',
      'ngrok',
      '--provider-args',
      '{"auth-token":"x","dry-run":true}',
    ])
    assert.equal(tunnel.event, 'tunnel')
  })
})
