import assert from 'node:assert/strict'
import {request as httpRequest} from 'node:http'
import {describe, it} from 'node:test'
import {createMemoryLogger} from '../../../src/lib/log/logger.ts'
import {logPath} from '../../../src/lib/proxy/log-path.ts'
import {startProxy, type ProxyConfig} from '../../../src/lib/proxy/proxy-server.ts'
import {freePort, startRecordingUpstream} from '../../helpers/mcp-upstream.ts'
import {loopbackProxyConfig} from '../../helpers/proxy-config.ts'

const QUERY_TOKEN = 'qs-access-token-7c1f0e'
const SESSION = 'legacy-sse-session-5d2a9b'
const TARGET = `/mcp/x?access_token=${QUERY_TOKEN}&sessionId=${SESSION}`

function send(
  url: string,
  opts: {method?: string; headers?: Record<string, string>; body?: string},
): Promise<number> {
  return new Promise((resolve, reject) => {
    const u = new URL(url)
    const req = httpRequest(
      {
        host: u.hostname,
        port: u.port,
        method: opts.method ?? 'POST',
        path: TARGET,
        headers: opts.headers ?? {},
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      },
    )
    req.on('error', reject)
    req.end(opts.body)
  })
}

describe('logPath', () => {
  const cases: Array<[string | undefined, string]> = [
    ['/mcp', '/mcp'],
    ['/mcp?access_token=abc', '/mcp'],
    ['/message?sessionId=1&x=2', '/message'],
    ['/a#frag', '/a'],
    ['/?', '/'],
    [undefined, '/'],
  ]
  for (const [input, expected] of cases)
    it(`logs ${String(input)} as ${expected}`, () => assert.equal(logPath(input), expected))
})

describe('proxy logs never carry the query string', () => {
  async function withProxy(
    target: string,
    extra: Partial<ProxyConfig>,
    fn: (url: string) => Promise<void>,
  ): Promise<string> {
    const logger = createMemoryLogger()
    const proxy = await startProxy(
      loopbackProxyConfig(target, {name: 'log-test', maxRequestBodySize: 16, ...extra}),
      {logger},
    )
    try {
      await fn(proxy.url)
    } finally {
      await proxy.close()
    }
    return logger.lines.join('\n')
  }

  function assertClean(log: string, expectedLines: number) {
    assert.equal(log.split('\n').filter((l) => l.includes('/mcp/x')).length, expectedLines, log)
    assert.ok(!log.includes(QUERY_TOKEN), log)
    assert.ok(!log.includes(SESSION), log)
    assert.ok(!log.includes('access_token='), log)
  }

  it('on refusals (body too large, Origin, incoming auth)', async () => {
    const upstream = await startRecordingUpstream()
    try {
      const log = await withProxy(
        upstream.url,
        {oidc: {issuer: 'http://127.0.0.1:9/never-contacted', scopes: ['openid']}},
        async (url) => {
          assert.equal(
            await send(url, {headers: {'content-type': 'application/json'}, body: 'x'.repeat(64)}),
            413,
          )
          assert.equal(
            await send(url, {method: 'GET', headers: {origin: 'http://evil.example'}}),
            403,
          )
          assert.equal(await send(url, {method: 'GET'}), 401)
        },
      )
      assertClean(log, 3)
      assert.equal(upstream.requests.length, 0)
    } finally {
      await upstream.close()
    }
  })

  it('on upstream failures', async () => {
    const closed = await freePort()
    const log = await withProxy(`http://127.0.0.1:${closed}`, {}, async (url) => {
      assert.equal(await send(url, {method: 'GET'}), 502)
    })
    assertClean(log, 1)
  })
})
