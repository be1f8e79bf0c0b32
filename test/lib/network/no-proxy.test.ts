/**
 * NO_PROXY and the proxy choice as curl reads them (issue 34), plus what curl lacks and Go has:
 * CIDR blocks and ports. Loopback is never proxied; the lower-case variable wins; a flag wins over
 * both; a proxy URL's password never shows.
 */
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {isLoopbackHost, parseNoProxy} from '../../../src/lib/network/no-proxy.ts'
import {networkSettings, proxyFor, redactProxy} from '../../../src/lib/network/settings.ts'

describe('NO_PROXY', () => {
  const cases: [string, string, number, boolean][] = [
    ['example.com', 'example.com', 443, true],
    ['example.com', 'www.example.com', 443, true],
    ['example.com', 'notexample.com', 443, false],
    ['.example.com', 'example.com', 443, true],
    ['.example.com', 'a.b.example.com', 80, true],
    ['*.example.com', 'a.example.com', 80, true],
    ['EXAMPLE.com.', 'Www.Example.COM', 80, true],
    ['example.com:8443', 'example.com', 8443, true],
    ['example.com:8443', 'example.com', 443, false],
    ['10.1.2.3', '10.1.2.3', 80, true],
    ['10.1.2.3', '10.1.2.4', 80, false],
    ['10.0.0.0/8', '10.200.1.1', 80, true],
    ['10.0.0.0/8', '11.0.0.1', 80, false],
    ['10.0.0.0/8', 'ten.example', 80, false],
    ['fd00::/8', '[fd12::1]', 443, true],
    ['[::1]:8080', '::1', 8080, true],
    ['[::1]:8080', '::1', 8081, false],
    ['a.com, b.com c.com', 'c.com', 1, true],
    ['*', 'anything.at.all', 1, true],
    ['', 'example.com', 1, false],
    ['garbage:port', 'garbage', 1, false],
    ['FE80::0001', 'fe80::1', 80, true],
    ['[FE80::0001]:8080', '[fe80::1]', 8080, true],
  ]
  for (const [list, host, port, want] of cases)
    it(`${JSON.stringify(list)} ${want ? 'matches' : 'does not match'} ${host}:${port}`, () =>
      assert.equal(parseNoProxy(list)(host, port), want))
})

describe('the proxy for a request', () => {
  it('loopback never goes through a proxy', () => {
    for (const h of [
      new URL('http://[::ffff:127.0.0.1]/').hostname,
      '0.0.0.0',
      '[::]',
      'localhost',
      'api.localhost',
      '127.0.0.1',
      '127.9.9.9',
      '[::1]',
      '::ffff:127.0.0.1',
    ])
      assert.equal(isLoopbackHost(h), true, h)
    for (const h of ['localhost.example.com', '128.0.0.1', '10.0.0.1'])
      assert.equal(isLoopbackHost(h), false, h)
    const s = networkSettings({HTTPS_PROXY: 'http://proxy:3128', HTTP_PROXY: 'http://proxy:3128'})
    assert.equal(proxyFor(s, new URL('http://127.0.0.1:8080/mcp')), undefined)
    assert.equal(proxyFor(s, new URL('https://localhost/')), undefined)
    assert.equal(proxyFor(s, new URL('https://idp.example.com/'))?.host, 'proxy:3128')
  })

  it('each scheme has its own variable; lower case wins; the flag wins over both', () => {
    const env = {
      HTTPS_PROXY: 'http://upper:1',
      https_proxy: 'http://lower:1',
      HTTP_PROXY: 'plain:2',
    }
    const s = networkSettings(env)
    assert.equal(proxyFor(s, new URL('https://x.example/'))?.host, 'lower:1')
    assert.equal(s.proxySource.https, 'https_proxy')
    assert.equal(proxyFor(s, new URL('http://x.example/'))?.href, 'http://plain:2/')
    const flagged = networkSettings(env, {proxyUrl: 'http://flag:3'})
    assert.equal(proxyFor(flagged, new URL('https://x.example/'))?.host, 'flag:3')
    assert.equal(proxyFor(flagged, new URL('http://x.example/'))?.host, 'flag:3')
    assert.equal(networkSettings({}).proxy.https, undefined)
  })

  it('NO_PROXY from the environment and from the flag', () => {
    const s = networkSettings({HTTPS_PROXY: 'http://p:1', NO_PROXY: '.corp'})
    assert.equal(proxyFor(s, new URL('https://idp.corp/')), undefined)
    const f = networkSettings({HTTPS_PROXY: 'http://p:1', NO_PROXY: '.corp'}, {noProxy: 'other'})
    assert.equal(proxyFor(f, new URL('https://idp.corp/'))?.host, 'p:1')
  })

  it('a password in a proxy URL is never shown', () => {
    assert.equal(redactProxy(new URL('http://alice:s3cret@proxy:3128')), 'http://***@proxy:3128')
    assert.equal(redactProxy(new URL('http://proxy:3128')), 'http://proxy:3128')
    assert.equal(redactProxy(new URL('http://proxy:3128/?key=abc')), 'http://proxy:3128')
  })
})

describe('the SSRF guard through a proxy', () => {
  it('judges the destination, never the proxy: a private destination is refused before the proxy is asked', async () => {
    const {configureNetwork} = await import('../../../src/lib/network/settings.ts')
    const {createOutboundClient} = await import('../../../src/lib/http/outbound.ts')
    const {createServer} = await import('node:net')
    // A "proxy" that records whether anyone connected to it.
    let asked = 0
    const fake = createServer((s) => {
      asked++
      s.destroy()
    })
    await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r))
    const port = (fake.address() as {port: number}).port
    configureNetwork({proxyUrl: `http://127.0.0.1:${port}`}, {})
    const client = createOutboundClient({timeoutMs: 2_000})
    try {
      for (const target of [
        'http://10.1.2.3/x',
        'https://169.254.169.254/latest',
        'http://[fd00::1]/',
        'http://localhost:8099/',
      ])
        await assert.rejects(
          client.fetch(target),
          (err: Error & {code?: string}) => err.code === 'ERR_OUTBOUND_BLOCKED',
          target,
        )
      assert.equal(asked, 0, 'the proxy was never asked for a blocked destination')
      // A name this machine cannot resolve cannot be checked: refused, unless --proxy-dns.
      await assert.rejects(
        client.fetch('http://nowhere.invalid/'),
        (err: Error & {code?: string}) =>
          err.code === 'ERR_OUTBOUND_BLOCKED' && /--proxy-dns/.test(err.message),
      )
      assert.equal(asked, 0)
      // A public destination goes to the proxy (which here hangs up on it).
      await assert.rejects(
        client.fetch('http://93.184.215.14/'),
        (err: Error & {code?: string}) => err.code !== 'ERR_OUTBOUND_BLOCKED',
      )
      assert.ok(asked >= 1, 'the proxy was asked')
      configureNetwork({proxyUrl: `http://127.0.0.1:${port}`, proxyDns: true}, {})
      const trusting = createOutboundClient({timeoutMs: 2_000})
      const before = asked
      await assert.rejects(
        trusting.fetch('http://nowhere.invalid/'),
        (err: Error & {code?: string}) => err.code !== 'ERR_OUTBOUND_BLOCKED',
      )
      assert.ok(asked > before, 'with --proxy-dns the proxy resolves it')
      await trusting.close()
    } finally {
      await client.close()
      fake.close()
      configureNetwork({}, {})
    }
  })
})
