import assert from 'node:assert/strict'
import {request as httpRequest} from 'node:http'
import {after, before, describe, it} from 'node:test'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {
  createOriginPolicy,
  normaliseOrigin,
  parseAllowedOrigins,
} from '../../../src/lib/proxy/origin.ts'
import {startProxy, type RunningProxy} from '../../../src/lib/proxy/proxy-server.ts'
import {startRecordingUpstream, type RecordingUpstream} from '../../helpers/mcp-upstream.ts'
import {loopbackProxyConfig} from '../../helpers/proxy-config.ts'

const REJECTED = '{"jsonrpc":"2.0","error":{"code":-32600,"message":"Origin not allowed"}}'

/** Sends raw header pairs so a test can repeat Origin. */
function post(
  url: string,
  rawHeaders: string[],
): Promise<{status: number; type: string | undefined; body: string}> {
  return new Promise((resolve, reject) => {
    const u = new URL(url)
    const req = httpRequest(
      {
        host: u.hostname,
        port: u.port,
        method: 'POST',
        path: '/mcp',
        headers: ['Host', u.host, 'Content-Length', '2', ...rawHeaders],
      },
      (res) => {
        let body = ''
        res.on('data', (c: Buffer) => (body += c.toString()))
        res.on('end', () =>
          resolve({status: res.statusCode ?? 0, type: res.headers['content-type'], body}),
        )
      },
    )
    req.on('error', reject)
    req.end('{}')
  })
}

describe('Origin allowlist with explicit --allowed-origins', () => {
  let upstream: RecordingUpstream
  let proxy: RunningProxy
  before(async () => {
    upstream = await startRecordingUpstream()
    proxy = await startProxy(
      loopbackProxyConfig(upstream.url, {
        name: 'o',
        allowedOrigins: parseAllowedOrigins(['https://App.Example.com', 'http://localhost:3000']),
      }),
      {logger: createMemoryLogger()},
    )
  })
  after(async () => {
    await proxy?.close()
    await upstream?.close()
  })

  const table: Array<[string, string[], number]> = [
    ['exact match passes', ['Origin', 'https://app.example.com'], 200],
    ['scheme and host compare case-insensitively', ['Origin', 'HTTPS://APP.EXAMPLE.COM'], 200],
    ['listed port passes', ['Origin', 'http://localhost:3000'], 200],
    ['another port is refused (port verbatim)', ['Origin', 'http://localhost:3001'], 403],
    ['explicit default port is a different origin', ['Origin', 'https://app.example.com:443'], 403],
    ['other scheme is refused', ['Origin', 'http://app.example.com'], 403],
    ['unlisted host is refused', ['Origin', 'https://evil.example.com'], 403],
    ['suffix trick is refused', ['Origin', 'https://app.example.com.evil.test'], 403],
    ['missing Origin passes', [], 200],
    [
      'duplicate Origin is refused even when both are allowed',
      ['Origin', 'https://app.example.com', 'Origin', 'https://app.example.com'],
      403,
    ],
    ['null is refused unless listed', ['Origin', 'null'], 403],
    ['garbage is refused', ['Origin', 'not an origin'], 403],
  ]
  for (const [name, headers, status] of table) {
    it(name, async () => {
      const seen = upstream.requests.length
      const res = await post(proxy.url, ['Content-Type', 'application/json', ...headers])
      assert.equal(res.status, status)
      if (status === 403) {
        assert.equal(res.body, REJECTED)
        assert.equal(res.type, 'application/json')
        assert.equal(upstream.requests.length, seen, 'nothing reached the target')
      }
    })
  }
})

describe('Origin defaults', () => {
  it('derives localhost, 127.0.0.1 and [::1] on the bound port for a loopback bind', async () => {
    const upstream = await startRecordingUpstream()
    const proxy = await startProxy(loopbackProxyConfig(upstream.url, {name: 'o'}), {
      logger: createMemoryLogger(),
    })
    try {
      for (const o of [
        `http://localhost:${proxy.port}`,
        `http://127.0.0.1:${proxy.port}`,
        `http://[::1]:${proxy.port}`,
      ]) {
        assert.equal((await post(proxy.url, ['Origin', o])).status, 200, o)
      }
      assert.equal(
        (await post(proxy.url, ['Origin', `http://localhost:${proxy.port + 1}`])).status,
        403,
      )
      assert.equal((await post(proxy.url, ['Origin', 'https://evil.test'])).status, 403)
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })

  it('warns and does not check Origin on a non-loopback bind without a list', async () => {
    const upstream = await startRecordingUpstream()
    const logger = createMemoryLogger()
    const proxy = await startProxy(
      {
        name: 'o',
        targetUri: new URL(upstream.url),
        host: '0.0.0.0',
        port: 0,
        maxRequestBodySize: 0,
        forwardHeaders: [],
      },
      {logger},
    )
    try {
      assert.match(logger.lines.join('\n'), /WARN .*Origin is not checked/)
      assert.equal(
        (await post(`http://127.0.0.1:${proxy.port}`, ['Origin', 'https://anything.test'])).status,
        200,
      )
      // Duplicates stay refused: there is no single origin to trust.
      assert.equal(
        (
          await post(`http://127.0.0.1:${proxy.port}`, [
            'Origin',
            'https://a.test',
            'Origin',
            'https://b.test',
          ])
        ).status,
        403,
      )
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })
})

describe('origin parsing', () => {
  it('normalises scheme and host case and keeps the port verbatim', () => {
    assert.equal(normaliseOrigin('HTTP://LocalHost:08080'), 'http://localhost:08080')
    assert.equal(normaliseOrigin('https://[::1]:443'), 'https://[::1]:443')
    assert.equal(normaliseOrigin('https://a.test/path'), undefined)
  })

  it('accepts a listed null', () => {
    const policy = createOriginPolicy(parseAllowedOrigins(['null']))
    assert.deepEqual(policy.check(['null']), {ok: true})
  })

  it('rejects an allowlist entry that is not an origin, naming the flag', () => {
    assert.throws(
      () => parseAllowedOrigins(['https://a.test/x']),
      (err: Error & {code?: string}) => {
        assert.equal(err.code, 'ERR_USAGE')
        assert.match(err.message, /--allowed-origins/)
        return true
      },
    )
  })
})
