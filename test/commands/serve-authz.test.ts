/**
 * `toolgate serve` with `auth.authz` (registry authorization), end to end: the real command, a
 * real OpenID provider (oidc-provider on loopback) issuing tokens with different groups, Cedar
 * policies deciding who sees which servers. Pages are walked over HTTP with cursors; the policy
 * file is rewritten while the server runs; a broken policy refuses to start or, on reload, keeps
 * the last good one.
 */
import {after, before, describe, test} from 'node:test'
import assert from 'node:assert/strict'
import {rmSync, writeFileSync} from 'node:fs'
import {setTimeout as sleep} from 'node:timers/promises'
import {startOidcProvider, type OidcProviderFixture} from '../helpers/oidc-provider.ts'
import {
  runServe,
  startServe,
  tempDir,
  writeConfig,
  type ServeProcess,
} from '../helpers/serve-process.ts'

const RESOURCE = 'https://registry.example.test'
const LIST = '/registry/default/v0.1/servers'

function servers(): unknown[] {
  const out: unknown[] = []
  const add = (ns: string, n: number, extra: (i: number) => object = () => ({})) => {
    for (let i = 0; i < n; i++)
      for (const version of ['1.0.0', '1.1.0'])
        out.push({
          name: `${ns}/tool-${String(i).padStart(2, '0')}`,
          version,
          description: i % 4 === 0 ? 'Forecast helper' : 'Helper',
          ...extra(i),
        })
  }
  add('io.team-a', 12)
  add('io.team-b', 9)
  add('com.vendor', 20, (i) => (i % 5 === 0 ? {_meta: {'io.example/visibility': 'public'}} : {}))
  return out
}

const POLICY = (extra: string[] = []) =>
  JSON.stringify({
    version: '1.0',
    type: 'cedarv1',
    cedar: {
      policies: [
        'permit(principal in ToolgateGroup::"team-a", action, resource is Server) when { resource.namespace == "io.team-a" };',
        'permit(principal in ToolgateGroup::"team-b", action, resource is Server) when { resource.namespace == "io.team-b" };',
        'permit(principal in ToolgateGroup::"admin", action, resource);',
        'permit(principal, action, resource is Server) when { resource.meta has "io.example/visibility" && resource.meta["io.example/visibility"] == "public" };',
        ...extra,
      ],
      entities_json: '[]',
      role_claim_name: 'roles',
    },
  })

let op: OidcProviderFixture
let s: ServeProcess
let dir: string
let policyFile: string
const tokens: Record<string, string> = {}

before(async () => {
  op = await startOidcProvider({audience: 'api://registry'})
  dir = tempDir()
  writeConfig(dir, 'servers.json', JSON.stringify(servers()))
  policyFile = writeConfig(dir, 'policy.json', POLICY())
  const config = writeConfig(
    dir,
    'serve.json',
    JSON.stringify({
      sources: [{name: 'local', file: {path: './servers.json'}}],
      registries: [
        {name: 'default', sources: ['local']},
        {name: 'internal', sources: ['local']},
      ],
      auth: {
        oauth: {
          resourceUrl: RESOURCE,
          publicPaths: ['/registry/default/v0.1/servers'],
          providers: [
            {name: 'op', issuerUrl: op.issuer, audience: 'api://registry', allowPrivateIP: true},
          ],
        },
        authz: {policyFile: './policy.json'},
      },
    }),
  )
  s = await startServe(['--config', config], {dir})
  tokens.a = await op.issueAccessToken({sub: 'alice', claims: {groups: ['team-a']}})
  tokens.b = await op.issueAccessToken({sub: 'bob', claims: {groups: ['team-b']}})
  tokens.admin = await op.issueAccessToken({sub: 'root', claims: {roles: ['admin']}})
  tokens.a2 = await op.issueAccessToken({sub: 'ann', claims: {groups: ['team-a']}})
})

after(async () => {
  await s?.stop()
  await op?.close()
  if (dir) rmSync(dir, {recursive: true, force: true})
})

interface Body {
  servers: {server: {name: string; version: string}}[]
  metadata: {count: number; nextCursor?: string}
  error?: string
}

async function get(path: string, token?: string): Promise<{status: number; body: Body}> {
  const res = await fetch(s.url + path, {
    headers: token ? {authorization: `Bearer ${token}`} : {},
  })
  return {status: res.status, body: (await res.json()) as Body}
}

async function walk(token: string | undefined, limit: number, query = ''): Promise<string[]> {
  const keys: string[] = []
  let cursor: string | undefined
  for (let guard = 0; guard < 500; guard++) {
    const qs = [query, `limit=${limit}`, cursor && `cursor=${encodeURIComponent(cursor)}`]
      .filter(Boolean)
      .join('&')
    const r = await get(`${LIST}?${qs}`, token)
    assert.equal(r.status, 200, JSON.stringify(r.body))
    assert.equal(r.body.metadata.count, r.body.servers.length)
    if (r.body.metadata.nextCursor) assert.equal(r.body.servers.length, limit)
    keys.push(...r.body.servers.map((e) => `${e.server.name}@${e.server.version}`))
    cursor = r.body.metadata.nextCursor
    if (!cursor) return keys
  }
  throw new Error('pagination did not end')
}

const all = servers() as {name: string; version: string; description: string; _meta?: object}[]
const key = (x: {name: string; version: string}) => `${x.name}@${x.version}`
const sorted = (xs: typeof all) => xs.map(key).sort((p, q) => (p < q ? -1 : p > q ? 1 : 0))
const isPublic = (x: (typeof all)[number]) => x._meta !== undefined

describe('who sees what', () => {
  const expectations: [string, () => string | undefined, (x: (typeof all)[number]) => boolean][] = [
    ['team A', () => tokens.a, (x) => x.name.startsWith('io.team-a/') || isPublic(x)],
    ['team B', () => tokens.b, (x) => x.name.startsWith('io.team-b/') || isPublic(x)],
    ['admin (a role)', () => tokens.admin, () => true],
    ['an anonymous caller on a public path', () => undefined, isPublic],
  ]
  for (const [label, token, sees] of expectations) {
    test(`${label}: every page at sizes 1, 7 and 100 shows exactly the allowed set`, async () => {
      const expected = sorted(all.filter(sees))
      for (const limit of [1, 7, 100]) assert.deepEqual(await walk(token(), limit), expected)
      const latest = sorted(all.filter((x) => sees(x) && x.version === '1.1.0'))
      assert.deepEqual(await walk(token(), 7, 'version=latest'), latest)
      const search = sorted(all.filter((x) => sees(x) && x.description.startsWith('Forecast')))
      assert.deepEqual(await walk(token(), 7, 'search=forecast'), search)
      assert.deepEqual(await walk(token(), 7, 'updated_since=2000-01-01T00:00:00Z'), expected)
      assert.deepEqual(await walk(token(), 7, 'updated_since=2999-01-01T00:00:00Z'), [])
    })
  }

  test('a hidden server is 404 on versions, versions/latest and an exact version', async () => {
    const hidden = encodeURIComponent('io.team-b/tool-01')
    for (const path of ['versions', 'versions/latest', 'versions/1.0.0']) {
      const r = await get(`/registry/default/v0.1/servers/${hidden}/${path}`, tokens.a)
      assert.equal(r.status, 404, path)
      assert.deepEqual(r.body, {error: 'not found'})
      const allowed = await get(`/registry/default/v0.1/servers/${hidden}/${path}`, tokens.b)
      assert.equal(allowed.status, 200, path)
    }
  })

  test('on a public path a refused token is an anonymous caller; elsewhere it is a 401', async () => {
    const anonymous = await walk(undefined, 100)
    assert.deepEqual(await walk('not-a-valid-token', 100), anonymous)
    const internal = '/registry/internal/v0.1/servers?limit=100'
    assert.equal((await get(internal)).status, 401)
    assert.equal((await get(internal, 'not-a-valid-token')).status, 401)
    const a = await get(internal, tokens.a)
    assert.equal(a.status, 200)
    assert.deepEqual(
      a.body.servers.map((e) => `${e.server.name}@${e.server.version}`),
      await walk(tokens.a, 100),
    )
  })

  test('two members of one team get the same pages (one cached class), other teams do not', async () => {
    const a = await get(`${LIST}?limit=100`, tokens.a)
    const a2 = await get(`${LIST}?limit=100`, tokens.a2)
    const b = await get(`${LIST}?limit=100`, tokens.b)
    assert.deepEqual(a.body, a2.body)
    assert.notDeepEqual(a.body, b.body)
  })
})

describe('policy changes', () => {
  test('a rewritten policy file takes effect without a restart; a broken one keeps the last good', async () => {
    const before = await walk(tokens.a, 100)
    assert.ok(before.some((k) => k.startsWith('io.team-a/')))
    // Team A loses one server by a forbid.
    writeFileSync(
      policyFile,
      POLICY(['forbid(principal, action, resource == Server::"io.team-a/tool-00");']),
    )
    const deadline = Date.now() + 15_000
    let now = before
    while (Date.now() < deadline) {
      now = await walk(tokens.a, 100)
      if (now.length !== before.length) break
      await sleep(100)
    }
    assert.deepEqual(
      now,
      before.filter((k) => !k.startsWith('io.team-a/tool-00@')),
    )
    assert.match(s.stderr(), /registry authorization policy reloaded/)

    writeFileSync(policyFile, POLICY(['permit(principal, action, resource) when { oops };']))
    const until = Date.now() + 15_000
    while (Date.now() < until && !/policy reload failed/.test(s.stderr())) await sleep(100)
    assert.match(
      s.stderr(),
      /registry authorization policy reload failed; keeping the last good policy.*cedar\.policies\[4\]: policy 4 does not parse/,
    )
    assert.deepEqual(await walk(tokens.a, 100), now)
  })

  test('anonymous mode with an inline policy: a public registry that hides internal servers', async () => {
    const d = tempDir()
    let anon: ServeProcess | undefined
    try {
      writeConfig(d, 'servers.json', JSON.stringify(servers()))
      const config = writeConfig(
        d,
        'serve.json',
        JSON.stringify({
          sources: [{name: 'local', file: {path: './servers.json'}}],
          auth: {
            mode: 'anonymous',
            authz: {
              cedar: {
                policies: [
                  'permit(principal == Client::"anonymous", action, resource) unless { resource.namespace like "io.team-*" };',
                ],
              },
            },
          },
        }),
      )
      anon = await startServe(['--config', config], {dir: d})
      const res = await fetch(`${anon.url}${LIST}?limit=100`)
      const body = (await res.json()) as Body
      assert.equal(res.status, 200)
      assert.deepEqual(
        body.servers.map((e) => `${e.server.name}@${e.server.version}`),
        sorted(all.filter((x) => x.name.startsWith('com.vendor/'))),
      )
      const hidden = await fetch(
        `${anon.url}/registry/default/v0.1/servers/${encodeURIComponent('io.team-a/tool-00')}/versions`,
      )
      assert.equal(hidden.status, 404)
    } finally {
      await anon?.stop()
      rmSync(d, {recursive: true, force: true})
    }
  })

  test('startup refuses a broken policy, naming the policy index and the parser message', async () => {
    const d = tempDir()
    try {
      writeConfig(d, 'servers.json', '[]')
      writeConfig(
        d,
        'policy.yaml',
        `version: "1.0"\ntype: cedarv1\ncedar:\n  policies:\n    - 'permit(principal, action, resource);'\n    - 'permit(principal, action resource);'\n`,
      )
      const config = writeConfig(
        d,
        'serve.yaml',
        'auth:\n  mode: anonymous\n  authz:\n    policyFile: ./policy.yaml\n',
      )
      const r = await runServe(['--config', config], {dir: d})
      assert.notEqual(r.code, 0)
      assert.match(
        r.stderr,
        /auth\.authz\.policyFile: .*policy\.yaml: cedar\.policies\[1\]: policy 1 does not parse: /,
      )
      assert.equal(r.stdout, '')
    } finally {
      rmSync(d, {recursive: true, force: true})
    }
  })
})

describe('a policy that names one caller (issue 30, finding 1)', () => {
  // alice and bob carry the same groups and claims; only one policy tells them apart, by uid in
  // the scope (`principal in Client::"bob"`, true for bob alone). Whoever lists first must not
  // decide what the other sees: both orders, on two registries with separate caches.
  test('two callers with equal claims see their own servers in either order', async () => {
    const d = tempDir()
    let own: ServeProcess | undefined
    try {
      writeConfig(d, 'servers.json', JSON.stringify(servers()))
      writeConfig(
        d,
        'policy.json',
        JSON.stringify({
          version: '1.0',
          type: 'cedarv1',
          cedar: {
            policies: [
              'permit(principal in ToolgateGroup::"team-a", action, resource is Server) when { resource.namespace == "io.team-a" };',
              'permit(principal in Client::"bob", action, resource is Server);',
            ],
            entities_json: '[]',
          },
        }),
      )
      const config = writeConfig(
        d,
        'serve.json',
        JSON.stringify({
          sources: [{name: 'local', file: {path: './servers.json'}}],
          registries: [
            {name: 'default', sources: ['local']},
            {name: 'internal', sources: ['local']},
          ],
          auth: {
            oauth: {
              resourceUrl: RESOURCE,
              providers: [
                {
                  name: 'op',
                  issuerUrl: op.issuer,
                  audience: 'api://registry',
                  allowPrivateIP: true,
                },
              ],
            },
            authz: {policyFile: './policy.json'},
          },
        }),
      )
      own = await startServe(['--config', config], {dir: d})
      const alice = await op.issueAccessToken({sub: 'alice', claims: {groups: ['team-a']}})
      const bob = await op.issueAccessToken({sub: 'bob', claims: {groups: ['team-a']}})
      const names = async (registry: string, token: string, path = '/servers?limit=100') => {
        const res = await fetch(`${own!.url}/registry/${registry}/v0.1${path}`, {
          headers: {authorization: `Bearer ${token}`},
        })
        if (res.status !== 200) return res.status
        const body = (await res.json()) as Body | {server: {name: string}}[]
        return JSON.stringify(body)
      }
      const teamA = sorted(all.filter((x) => x.name.startsWith('io.team-a/')))
      const everything = sorted(all)
      const listed = (text: string | number) =>
        typeof text === 'number'
          ? []
          : (JSON.parse(text) as Body).servers
              .map((e) => `${e.server.name}@${e.server.version}`)
              .sort()
      const b1 = await names('default', bob)
      const a1 = await names('default', alice)
      const a2 = await names('internal', alice)
      const b2 = await names('internal', bob)
      assert.deepEqual(listed(b1), everything, 'bob first')
      assert.deepEqual(listed(a1), teamA, 'alice after bob')
      assert.deepEqual(listed(a2), teamA, 'alice first')
      assert.deepEqual(listed(b2), everything, 'bob after alice')
      // The versions route too: a team-b server is bob's alone.
      const path = `/servers/${encodeURIComponent('io.team-b/tool-00')}/versions`
      assert.notEqual(await names('default', bob, path), 404)
      assert.equal(await names('default', alice, path), 404)
      assert.equal(await names('internal', alice, path), 404)
      assert.notEqual(await names('internal', bob, path), 404)
    } finally {
      await own?.stop()
      rmSync(d, {recursive: true, force: true})
    }
  })
})
