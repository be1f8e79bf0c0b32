import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import type {ResolvedServer} from '../../../src/lib/oauth/discovery.ts'
import {chooseLoginFlow} from '../../../src/lib/oauth/login-flow.ts'
import {
  detectLoginSession,
  remoteAuthOptionsFromFlags,
  type LoginSession,
} from '../../../src/lib/oauth/remote-auth-options.ts'

const server = (device: boolean) =>
  ({
    as: {
      issuer: 'https://idp.example',
      ...(device ? {device_authorization_endpoint: 'https://idp.example/device'} : {}),
    },
    oidc: true,
    learned: false,
    via: 'issuer',
  }) as ResolvedServer

const session = (s: Partial<LoginSession>): LoginSession => ({
  interactive: true,
  display: false,
  tty: false,
  ...s,
})

describe('choosing the login flow', () => {
  it('auto: browser with a display, device over SSH when offered, an error when nobody can act', () => {
    const auto = (s: Partial<LoginSession>, device = true) =>
      chooseLoginFlow({flow: 'auto', session: session(s)}, server(device))
    assert.equal(auto({display: true}), 'browser')
    assert.equal(auto({display: true, tty: true}), 'browser')
    assert.equal(auto({tty: true}), 'device')
    assert.equal(auto({tty: true}, false), 'browser', 'no device endpoint: the printed URL')
    for (const s of [{interactive: false, display: true, tty: true}, {}]) {
      assert.throws(
        () => auto(s),
        (err: Error & {code?: string}) => {
          assert.equal(err.code, 'ERR_INPUT_REQUIRED')
          assert.match(err.message, /--remote-auth-grant client_credentials/)
          return true
        },
      )
    }
  })

  it('an explicit flow is used as given, and the library default is the browser', () => {
    const none = session({interactive: false})
    assert.equal(chooseLoginFlow({flow: 'device', session: none}, server(false)), 'device')
    assert.equal(chooseLoginFlow({flow: 'browser', session: none}, server(true)), 'browser')
    assert.equal(chooseLoginFlow({}, server(true)), 'browser')
  })

  it('detects CI, --non-interactive, displays and SSH sessions', () => {
    assert.equal(detectLoginSession({CI: 'true'}, {}, true).interactive, false)
    assert.equal(detectLoginSession({CI: '1'}, {}, true).interactive, false)
    assert.equal(detectLoginSession({CI: 'false'}, {}, true).interactive, true)
    assert.equal(detectLoginSession({}, {'non-interactive': true}, true).interactive, false)
    assert.equal(detectLoginSession({DISPLAY: ':0'}, {}, false, 'linux').display, true)
    assert.equal(detectLoginSession({WAYLAND_DISPLAY: 'w'}, {}, false, 'linux').display, true)
    assert.equal(detectLoginSession({}, {}, true, 'linux').display, false)
    assert.equal(detectLoginSession({}, {}, false, 'darwin').display, true)
    assert.equal(detectLoginSession({SSH_CONNECTION: 'a b'}, {}, true, 'darwin').display, false)
  })
})

describe('headless remote-auth flags', () => {
  const target = 'https://mcp.example/mcp'
  const on = {'remote-auth': true, 'remote-auth-issuer': 'https://idp.example'}
  const refuse = async (flags: Record<string, unknown>, message: RegExp, env = {}) =>
    assert.rejects(
      remoteAuthOptionsFromFlags({...on, ...flags}, target, {env}),
      (err: Error & {code?: string}) => {
        assert.equal(err.code, 'ERR_USAGE')
        assert.match(err.message, message)
        return true
      },
    )

  it('defaults to auto, or to the browser when --remote-auth-skip-browser asks for the URL', async () => {
    assert.equal((await remoteAuthOptionsFromFlags(on, target, {env: {}}))?.flow, 'auto')
    assert.equal(
      (
        await remoteAuthOptionsFromFlags({...on, 'remote-auth-skip-browser': true}, target, {
          env: {},
        })
      )?.flow,
      'browser',
    )
  })

  it('refuses inconsistent headless flags, naming them', async () => {
    await refuse({'remote-auth-flow': 'sideways'}, /--remote-auth-flow: "sideways" must be one of/)
    await refuse({'remote-auth-grant': 'password'}, /--remote-auth-grant: "password"/)
    await refuse({'remote-auth-grant': 'client_credentials'}, /needs --remote-auth-client-id/)
    await refuse(
      {'remote-auth-grant': 'client_credentials', 'remote-auth-client-id': 'c'},
      /needs a client secret .* or --remote-auth-client-key-file/,
    )
    await refuse(
      {
        'remote-auth-grant': 'client_credentials',
        'remote-auth-client-id': 'c',
        'remote-auth-client-secret': 's',
      },
      /not on the command line/,
    )
    await refuse(
      {
        'remote-auth-grant': 'client_credentials',
        'remote-auth-client-id': 'c',
        'remote-auth-client-key-file': '/k.pem',
        'remote-auth-flow': 'device',
      },
      /--remote-auth-flow applies to a person's login/,
    )
    await refuse(
      {'remote-auth-client-key-file': '/k.pem'},
      /needs --remote-auth-grant client_credentials/,
    )
    await refuse(
      {'remote-auth-flow': 'device', 'remote-auth-skip-browser': true},
      /applies to --remote-auth-flow browser/,
    )
    await assert.rejects(
      remoteAuthOptionsFromFlags({'remote-auth-flow': 'device'}, target, {env: {}}),
      /--remote-auth-flow needs --remote-auth/,
    )
  })

  it('takes the client credentials secret from the environment', async () => {
    const o = await remoteAuthOptionsFromFlags(
      {...on, 'remote-auth-grant': 'client_credentials', 'remote-auth-client-id': 'c'},
      target,
      {env: {TOOLGATE_REMOTE_OAUTH_CLIENT_SECRET: 'from-env'}},
    )
    assert.equal(o?.grant, 'client_credentials')
    assert.equal(o?.clientSecret, 'from-env')
  })
})
