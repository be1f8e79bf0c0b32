import {after, describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {startRecordingUpstream, type RecordingUpstream} from '../helpers/mcp-upstream.ts'
import {
  freshHome,
  keyringToolsAvailable,
  runCli,
  spawnCli,
  type CliProcess,
  type RunCliOptions,
} from '../helpers/keyring-session.ts'
import {needs} from '../helpers/component.ts'

/**
 * `toolgate proxy --remote-forward-headers-secret Name=secret-name`: a secret stored with
 * `toolgate secret set` reaches a real upstream (a recording HTTP server) as a header, on a desktop
 * (OS keyring) and in a CI shell (TOOLGATE_SECRETS_PASSWORD), and never appears in the proxy's output.
 */
const CANARY = 'tok-SECRET-CANARY-7f3a9'
const cleanups: Array<() => Promise<unknown>> = []
after(async () => {
  for (const c of cleanups.reverse()) await c()
})

async function setup(
  mode: RunCliOptions['bus'],
): Promise<{upstream: RecordingUpstream; opts: RunCliOptions}> {
  const {home, cleanup} = await freshHome()
  cleanups.push(cleanup)
  const upstream = await startRecordingUpstream()
  cleanups.push(() => upstream.close())
  const opts: RunCliOptions = {
    home,
    bus: mode,
    env: {TOOLGATE_SECRETS_PASSWORD: 'proxy-test-password'},
  }
  if (mode === 'keyring') {
    const s = await runCli(['secret', 'setup'], opts)
    assert.equal(s.code, 0, s.stderr)
    opts.env = {} // from here on the password comes from the keyring only
  }
  const set = await runCli(['secret', 'set', 'upstream-api-key'], {...opts, stdin: CANARY + '\n'})
  assert.equal(set.code, 0, set.stderr)
  return {upstream, opts}
}

async function startProxy(
  args: string[],
  opts: RunCliOptions,
): Promise<{proxy: CliProcess; url: string}> {
  const proxy = spawnCli(['proxy', 'secret-test', ...args, '--debug'], {
    ...opts,
    timeoutMs: 120_000,
  })
  cleanups.push(() => proxy.stop())
  const m = await proxy.waitForStdout(/listening on (http:\/\/127\.0\.0\.1:\d+)/)
  return {proxy, url: m[1] as string}
}

const modes: Array<[RunCliOptions['bus'], string | false]> = [
  ['none', false],
  [
    'keyring',
    needs(
      'the OS keyring',
      !keyringToolsAvailable() && 'dbus-run-session / gnome-keyring-daemon not installed',
    ),
  ],
]

for (const [mode, skip] of modes) {
  describe(
    `proxy header injection from a secret (${mode === 'keyring' ? 'OS keyring' : 'CI shell, env password'})`,
    {skip},
    () => {
      it('injects the secret, overriding a plaintext header and the client value, and never logs it', async () => {
        const {upstream, opts} = await setup(mode)
        const {proxy, url} = await startProxy(
          [
            '--target-uri',
            upstream.url,
            '--remote-forward-headers',
            'X-Api-Key=plaintext-loses',
            '--remote-forward-headers',
            'X-Tenant=acme',
            '--remote-forward-headers-secret',
            'X-Api-Key=upstream-api-key',
          ],
          opts,
        )
        const res = await fetch(`${url}/mcp`, {
          method: 'POST',
          headers: {'content-type': 'application/json', 'x-api-key': 'client-sent'},
          body: JSON.stringify({jsonrpc: '2.0', id: 1, method: 'ping'}),
          signal: AbortSignal.timeout(30_000),
        })
        assert.equal(res.status, 200)
        await res.arrayBuffer()
        const seen = await upstream.waitForRequest(1)
        assert.equal(seen.headers['x-api-key'], CANARY)
        assert.equal(seen.headers['x-tenant'], 'acme')
        const {stdout, stderr} = await proxy.stop()
        assert.ok(stderr.length > 0, 'expected --debug output to inspect')
        assert.equal(stdout.includes(CANARY), false, 'secret in stdout')
        assert.equal(stderr.includes(CANARY), false, 'secret in a log line')
      })
    },
  )
}

describe('proxy startup with a missing header secret', () => {
  it('exits non-zero naming the header and the secret, before listening', async () => {
    const {upstream, opts} = await setup('none')
    const r = await runCli(
      [
        'proxy',
        '--target-uri',
        upstream.url,
        '--remote-forward-headers-secret',
        'X-Api-Key=no-such-secret',
        'secret-test',
      ],
      opts,
    )
    assert.equal(r.code, 1)
    assert.match(r.stderr, /X-Api-Key=no-such-secret/)
    assert.doesNotMatch(r.stdout, /listening/)
    assert.equal(upstream.requests.length, 0)
  })
})
