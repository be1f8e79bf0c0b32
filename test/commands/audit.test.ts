/**
 * The audit trail (issue 35) as an operator uses it: `run --audit-log FILE` in front of a real MCP
 * server (server-everything), with a real oidc-provider and a Cedar policy; allowed and denied
 * calls, a refused token, secrets in arguments; then `audit verify` on the file, and on copies with
 * one line edited, one deleted, two swapped.
 */
import assert from 'node:assert/strict'
import {readFileSync, writeFileSync} from 'node:fs'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {startOidcProvider, type OidcProviderFixture} from '../helpers/oidc-provider.ts'
import {runCli} from '../helpers/proxy-run.ts'
import {EVERYTHING, mcpClient, runForeground, textOf} from '../helpers/workload.ts'

type Rec = Record<string, unknown> & {event: string}

describe('audit trail of a workload', () => {
  let home: string
  let idp: OidcProviderFixture
  let file: string
  let records: Rec[]

  async function cli(argv: string[]) {
    const run = runCli(argv, home)
    const code = await run.exited
    return {code, stdout: run.stdout(), stderr: run.stderr()}
  }

  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'toolgate-audit-'))
    idp = await startOidcProvider()
    file = join(home, 'audit', 'audit.log')
    const policy = join(home, 'authz.yaml')
    await writeFile(
      policy,
      [
        'version: "1.0"',
        'type: cedarv1',
        'cedar:',
        '  entities_json: "[]"',
        '  policies:',
        `    - 'permit(principal, action == Action::"call_tool", resource == Tool::"echo");'`,
        `    - 'permit(principal == Client::"alice", action == Action::"call_tool", resource == Tool::"get-sum");'`,
      ].join('\n'),
    )
    const workload = await runForeground(
      'audited',
      [
        '--oidc-issuer',
        idp.issuer,
        '--oidc-audience',
        idp.audience,
        '--authz-config',
        policy,
        '--audit-log',
        file,
        '--audit-include-args',
        '--audit-redact-keys',
        'message_secret_word',
      ],
      EVERYTHING,
      home,
    )
    try {
      // No token: refused, and accounted for.
      const anon = await fetch(workload.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({jsonrpc: '2.0', id: 1, method: 'initialize', params: {}}),
      })
      assert.equal(anon.status, 401)
      const alice = await mcpClient(workload.url, {
        token: await idp.issueAccessToken({sub: 'alice'}),
      })
      const bob = await mcpClient(workload.url, {token: await idp.issueAccessToken({sub: 'bob'})})
      assert.ok((await alice.listTools()).tools.length > 0)
      assert.equal(
        textOf(await alice.callTool({name: 'get-sum', arguments: {a: 1, b: 2}})),
        'The sum of 1 and 2 is 3.',
      )
      // A secret in an argument, under a key that looks like one and under one the flag names.
      await bob
        .callTool({
          name: 'echo',
          arguments: {
            message: 'hello',
            apiToken: 'tok-SECRET-1',
            nested: {message_secret_word: 'SECRET-2'},
          },
        })
        .catch(() => undefined)
      await assert.rejects(bob.callTool({name: 'get-sum', arguments: {a: 1, b: 2}}), /Unauthorized/)
      await alice.close()
      await bob.close()
    } finally {
      await workload.stop()
    }
    records = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Rec)
  })

  after(async () => {
    await idp?.close()
    await rm(home, {recursive: true, force: true})
  })

  it('records who called which tool, and which policy allowed it', () => {
    const call = records.find((r) => r.event === 'mcp_tool_call' && r.name === 'get-sum')!
    assert.ok(call, JSON.stringify(records, null, 1))
    assert.equal(call.outcome, 'success')
    assert.deepEqual(call.principal, {
      issuer: idp.issuer,
      subject: 'alice',
      clientId: idp.client.clientId,
    })
    assert.equal((call.decision as {decision: string}).decision, 'allow')
    assert.equal((call.decision as {policies: string[]}).policies.length, 1)
    assert.deepEqual(call.args, {a: 1, b: 2})
    assert.equal(call.workload, 'audited')
    assert.equal(call.status, 200)
    assert.equal(typeof call.durationMs, 'number')
    assert.match(String(call.requestId), /^[0-9a-f-]{36}$/)
    assert.equal(typeof call.sessionId, 'string')
  })

  it('records the denial, the refused token and the handshake', () => {
    const denied = records.find((r) => r.event === 'authz_denied')!
    assert.ok(denied)
    assert.deepEqual(
      [
        denied.outcome,
        denied.mcpEvent,
        denied.name,
        (denied.principal as {subject: string}).subject,
      ],
      ['denied', 'mcp_tool_call', 'get-sum', 'bob'],
    )
    assert.deepEqual(denied.decision, {decision: 'deny', policies: []})
    const refused = records.find((r) => r.event === 'auth_failure')!
    assert.deepEqual([refused.status, refused.principal], [401, null])
    assert.match(String(refused.reason), /invalid_request|invalid_token/)
    for (const e of ['mcp_initialize', 'mcp_notification', 'mcp_list'])
      assert.ok(
        records.some((r) => r.event === e),
        `${e} recorded`,
      )
  })

  it('never records a secret from the arguments', () => {
    const text = readFileSync(file, 'utf8')
    assert.ok(!text.includes('tok-SECRET-1') && !text.includes('SECRET-2'), 'no secret in the file')
    const echo = records.find((r) => r.event === 'mcp_tool_call' && r.name === 'echo')!
    assert.deepEqual(echo.args, {
      message: 'hello',
      apiToken: '[redacted]',
      nested: {message_secret_word: '[redacted]'},
    })
    // Nor a bearer token from the requests.
    assert.ok(!/eyJ[\w-]+\.eyJ/.test(text), 'no JWT in the file')
  })

  it('audit verify: the file is intact; an edit, a deletion or a swap is named', async () => {
    const ok = await cli(['audit', 'verify', file])
    assert.equal(ok.code, 0, ok.stdout + ok.stderr)
    assert.match(
      ok.stdout,
      new RegExp(`^OK: ${records.length} records in 1 file\\(s\\), chain intact`),
    )
    const lines = readFileSync(file, 'utf8').trim().split('\n')
    const variant = async (name: string, edited: string[]) => {
      const copy = join(home, `${name}.log`)
      writeFileSync(copy, edited.join('\n') + '\n')
      const r = await cli(['audit', 'verify', copy, '--json'])
      assert.equal(r.code, 70, `${name}: ${r.stdout}`)
      return JSON.parse(r.stdout.split('\n')[0]!) as {
        ok: boolean
        problem: {line: number; what: string}
      }
    }
    const edited = [...lines]
    edited[2] = edited[2]!.replace('"outcome":"success"', '"outcome":"failure"')
    assert.deepEqual((await variant('edited', edited)).problem, {
      file: join(home, 'edited.log'),
      line: 3,
      what: 'changed (its hash does not match its content)',
    })
    const deleted = lines.filter((_, i) => i !== 3)
    const del = await variant('deleted', deleted)
    assert.equal(del.problem.line, 4)
    assert.match(del.problem.what, /records 4–4 before it were removed/)
    const swapped = [...lines]
    ;[swapped[1], swapped[2]] = [swapped[2]!, swapped[1]!]
    const swap = await variant('swapped', swapped)
    assert.equal(swap.problem.line, 2)
    assert.equal(swap.problem.what, 'reordered (seq 3 comes before seq 2)')
  })
})

describe('audit trail of serve', () => {
  it('records registry reads with the caller, and refused tokens', async () => {
    const {startServe, tempDir, writeConfig, FIXTURES} = await import('../helpers/serve-process.ts')
    const idp = await startOidcProvider({audience: 'api://registry'})
    const dir = tempDir()
    const file = join(dir, 'audit', 'serve-audit.log')
    const config = writeConfig(
      dir,
      'serve.json',
      JSON.stringify({
        sources: [{name: 'fixture', file: {path: join(FIXTURES, 'registry.json')}}],
        auth: {
          oauth: {
            resourceUrl: 'http://127.0.0.1/registry',
            providers: [
              {name: 'op', issuerUrl: idp.issuer, audience: 'api://registry', allowPrivateIP: true},
            ],
          },
        },
      }),
    )
    const s = await startServe(['--config', config, '--audit-log', file], {dir})
    try {
      const list = `${s.url}/registry/default/v0.1/servers`
      assert.equal((await fetch(list)).status, 401)
      const token = await idp.issueAccessToken({sub: 'carol', audience: 'api://registry'})
      assert.equal((await fetch(list, {headers: {authorization: `Bearer ${token}`}})).status, 200)
    } finally {
      await s.stop()
      await idp.close()
    }
    const records = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Rec)
    assert.deepEqual(
      records.map((r) => [
        r.event,
        r.status,
        (r.principal as {subject?: string} | null)?.subject ?? null,
      ]),
      [
        ['auth_failure', 401, null],
        ['registry_read', 200, 'carol'],
      ],
    )
    assert.equal(records[1]!.route, 'list_servers')
    const ok = runCli(['audit', 'verify', file], dir)
    assert.equal(await ok.exited, 0, ok.stdout())
  })
})
