import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'
import {
  approveDeviceLogin,
  startLoginProvider,
  startProtectedResource,
  type ProtectedResource,
} from '../helpers/oidc-login.ts'
import {runCli, waitFor} from '../helpers/proxy-run.ts'

/**
 * The headless remote-auth features (issue 20) through the commands that reach remote servers
 * besides `proxy`: the device flow in `proxy stdio` (stdout stays protocol-only while the code is
 * shown on stderr), client credentials in a detached `run --url` under CI, and the automatic flow
 * refusing at once under CI. A real oidc-provider with the device flow enabled.
 */
const AUDIENCE = 'https://mcp.example.test/mcp'
const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {protocolVersion: '2025-06-18', capabilities: {}, clientInfo: {name: 'ci', version: '1'}},
})

describe('headless remote auth in proxy stdio and run --url', () => {
  let idp: Awaited<ReturnType<typeof startLoginProvider>>
  let upstream: ProtectedResource
  let home: string

  before(async () => {
    idp = await startLoginProvider({
      audience: AUDIENCE,
      accessTokenTtl: 120,
      configure: (config) => {
        config.features!.deviceFlow = {enabled: true}
      },
    })
    upstream = await startProtectedResource(idp.issuer, AUDIENCE)
    home = await mkdtemp(join(tmpdir(), 'toolgate-headless-2-'))
  })
  after(async () => {
    await runCli(['stop', '--all'], home).exited
    await upstream.close()
    await idp.close()
    await rm(home, {recursive: true, force: true})
  })

  it('proxy stdio: a device-flow login on stderr, approved elsewhere, then the held message goes out', async () => {
    const proc = spawn(
      process.execPath,
      [
        'bin/dev.js',
        'proxy',
        'stdio',
        upstream.url,
        '--json',
        '--remote-auth',
        '--remote-auth-issuer',
        idp.issuer,
        '--remote-auth-flow',
        'device',
        '--remote-auth-resource',
        AUDIENCE,
      ],
      {
        env: {
          PATH: process.env.PATH,
          HOME: home,
          XDG_STATE_HOME: join(home, 's'),
          XDG_CONFIG_HOME: join(home, 'c'),
          XDG_DATA_HOME: join(home, 'd'),
          TOOLGATE_SECRETS_PASSWORD: 'test-password-for-the-secrets-file',
          DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent',
        },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    )
    let out = ''
    let err = ''
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()))
    proc.stderr.on('data', (d: Buffer) => (err += d.toString()))
    const run = {
      child: proc,
      stdout: () => out,
      stderr: () => err,
      exited: new Promise<number | null>((r) => proc.once('exit', r)),
    }
    proc.stdin.write(INIT + '\n')
    const code = await waitFor(
      'the device code event',
      () =>
        err
          .split('\n')
          .filter((l) => l.includes('"event":"device_code"'))
          .map((l) => JSON.parse(l) as Record<string, unknown>)[0],
      run,
    )
    assert.equal(out, '', 'stdout carries only protocol lines: nothing yet')
    assert.equal(upstream.calls.length, 0)
    assert.equal(
      await approveDeviceLogin(String(code.verification_uri_complete), 'approve', 'erin'),
      'approved',
    )
    await waitFor(
      'the held initialize upstream',
      () => (upstream.calls.some((c) => c.ok) ? true : undefined),
      run,
      30_000,
    )
    proc.stdin.end()
    assert.equal(await run.exited, 0)
    for (const line of out.split('\n').filter(Boolean)) {
      assert.equal((JSON.parse(line) as {jsonrpc: string}).jsonrpc, '2.0')
    }
  })

  it('run --url: client credentials under CI; the detached run returns once the token is there', async () => {
    const secretFile = join(home, 'client-secret')
    await writeFile(secretFile, idp.client.clientSecret + '\n', {mode: 0o600})
    const before = upstream.calls.filter((c) => c.ok).length
    const r = runCli(
      [
        'run',
        'machine',
        '--json',
        '--url',
        upstream.url,
        '--remote-auth',
        '--remote-auth-grant',
        'client_credentials',
        '--remote-auth-issuer',
        idp.issuer,
        '--remote-auth-client-id',
        idp.client.clientId,
        '--remote-auth-client-secret-file',
        secretFile,
        '--remote-auth-resource',
        AUDIENCE,
      ],
      home,
      {CI: 'true'},
    )
    assert.equal(await r.exited, 0, r.stderr())
    const {url} = JSON.parse(r.stdout()) as {url: string}
    const res = await fetch(url)
    assert.equal(res.status, 200)
    await res.body?.cancel()
    assert.ok(upstream.calls.filter((c) => c.ok).length > before)
    assert.equal(await runCli(['stop', 'machine'], home).exited, 0)
  })

  it('run --url: an automatic login under CI fails at once, naming the ways that need no person', async () => {
    const r = runCli(
      ['run', 'nobody', '--url', upstream.url, '--remote-auth', '--remote-auth-issuer', idp.issuer],
      home,
      {CI: 'true'},
    )
    assert.notEqual(await r.exited, 0)
    assert.match(r.stderr(), /--remote-auth-grant client_credentials/)
  })
})
