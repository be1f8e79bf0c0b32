/**
 * Publishing to `toolgate serve` (issue 36, docs/registry-publish.md), end to end: the real
 * command, tokens from a real OpenID provider, a Cedar policy deciding who may publish where, and
 * every read route seeing a publish at once. The PostgreSQL part runs two replicas on one database:
 * a publish on one is listed on the other within a second.
 */
import {after, before, describe, test} from 'node:test'
import assert from 'node:assert/strict'
import {readFileSync, rmSync} from 'node:fs'
import {join} from 'node:path'
import {startOidcProvider, type OidcProviderFixture} from '../helpers/oidc-provider.ts'
import {postgresMissing} from '../helpers/postgres.ts'
import {
  getJson,
  startServe,
  tempDir,
  writeConfig,
  type ServeProcess,
} from '../helpers/serve-process.ts'
import {pgCluster, stopStoreBackends} from '../helpers/store-backends.ts'

const RESOURCE = 'https://registry.example.test'
const API = '/registry/default/v0.1'

const POLICY = {
  version: '1.0',
  type: 'cedarv1',
  cedar: {
    policies: [
      // 0. Everyone signed in reads everything.
      'permit(principal, action in [Action::"list_servers", Action::"get_server"], resource);',
      // 1. Team A publishes in its own namespace.
      'permit(principal in ToolgateGroup::"team-a", action == Action::"publish", resource is Server) when { resource.namespace == "io.team-a" };',
      // 2. A grant written for reads, with `action` unscoped: it must not grant publishing.
      'permit(principal in ToolgateGroup::"legacy", action, resource);',
      // 3. Admins change statuses.
      'permit(principal in ToolgateGroup::"admin", action == Action::"set_status", resource);',
      // 4. Nobody publishes into the reserved namespace, whatever else says.
      'forbid(principal, action, resource is Server) when { resource.namespace == "io.team-a.reserved" };',
      // 5. Team A may also publish io.vendor, whose names the mirror source already serves.
      'permit(principal in ToolgateGroup::"team-a", action == Action::"publish", resource is Server) when { resource.namespace == "io.vendor" };',
    ],
    role_claim_name: 'roles',
  },
}

function server(name: string, version: string, extra: object = {}) {
  return {
    name,
    version,
    description: `The ${name.split('/')[1]} server`,
    packages: [
      {
        registryType: 'npm',
        identifier: `@team/${name.split('/')[1]}`,
        version,
        transport: {type: 'stdio'},
      },
    ],
    ...extra,
  }
}

async function send(
  base: string,
  method: string,
  path: string,
  body: unknown,
  token?: string,
  headers: Record<string, string> = {},
) {
  return getJson(base + path, {
    method,
    headers: {
      'content-type': 'application/json',
      ...(token ? {authorization: `Bearer ${token}`} : {}),
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
}

const statusPath = (name: string, version: string) =>
  `${API}/servers/${encodeURIComponent(name)}/versions/${version}/status`

describe('serve: publishing with Cedar deciding who may publish where (SQLite)', () => {
  let op: OidcProviderFixture
  let s: ServeProcess
  let dir: string
  const tokens: Record<string, string> = {}

  before(async () => {
    op = await startOidcProvider({audience: 'api://registry'})
    dir = tempDir()
    writeConfig(dir, 'policy.json', JSON.stringify(POLICY))
    writeConfig(
      dir,
      'upstream.json',
      JSON.stringify([{name: 'io.vendor/mirror', version: '2.0.0', description: 'mirrored'}]),
    )
    const config = writeConfig(
      dir,
      'serve.json',
      JSON.stringify({
        sources: [
          {name: 'team', managed: {}},
          {name: 'mirror', file: {path: './upstream.json'}},
        ],
        registries: [
          {name: 'default', sources: ['team', 'mirror']},
          {name: 'readonly', sources: ['mirror']},
        ],
        // Many publishes in a row from one caller here; the default bucket is tested elsewhere.
        rateLimits: {publish: {rate: '100/s', burst: 100}},
        auth: {
          oauth: {
            resourceUrl: RESOURCE,
            // Public for reading; a write there still needs a token (anonymous never publishes).
            publicPaths: ['/registry/default'],
            providers: [
              {name: 'op', issuerUrl: op.issuer, audience: 'api://registry', allowPrivateIP: true},
            ],
          },
          authz: {policyFile: './policy.json'},
        },
      }),
    )
    s = await startServe(['--config', config, '--audit-log', join(dir, 'audit.log')], {dir})
    tokens.alice = await op.issueAccessToken({sub: 'alice', claims: {groups: ['team-a']}})
    tokens.bob = await op.issueAccessToken({sub: 'bob', claims: {groups: ['team-b']}})
    tokens.legacy = await op.issueAccessToken({sub: 'lee', claims: {groups: ['legacy']}})
    tokens.admin = await op.issueAccessToken({sub: 'root', claims: {roles: ['admin']}})
  })

  after(async () => {
    await s?.stop()
    await op?.close()
    if (dir) rmSync(dir, {recursive: true, force: true})
  })

  test('a valid publish is served, listed and searchable in the answer to the publish itself', async () => {
    const r = await send(
      s.url,
      'POST',
      `${API}/publish`,
      server('io.team-a/weather', '1.0.0'),
      tokens.alice,
    )
    assert.equal(r.status, 200, r.text)
    const entry = r.body as {
      server: {name: string}
      _meta: Record<string, {status: string; isLatest: boolean}>
    }
    assert.equal(entry.server.name, 'io.team-a/weather')
    const official = entry._meta['io.modelcontextprotocol.registry/official']!
    assert.equal(official.status, 'active')
    assert.equal(official.isLatest, true)
    // Immediately, no waiting: list, search, versions, latest.
    const search = await getJson(`${s.url}${API}/servers?search=WEATHER`, {
      headers: {authorization: `Bearer ${tokens.bob}`},
    })
    const names = (search.body as {servers: {server: {name: string}}[]}).servers.map(
      (e) => e.server.name,
    )
    assert.deepEqual(names, ['io.team-a/weather'])
    const latest = await getJson(`${s.url}${API}/servers/io.team-a%2Fweather/versions/latest`, {
      headers: {authorization: `Bearer ${tokens.bob}`},
    })
    assert.equal(latest.status, 200)
  })

  test('a server.json that fails the schema is a 400 naming each field by JSON pointer', async () => {
    const bad = {
      name: 'io.team-a/broken',
      version: '^1.0.0',
      packages: [{registryType: 'npm', identifier: 'x', transport: {type: 'sse'}}],
    }
    const r = await send(s.url, 'POST', `${API}/publish`, bad, tokens.alice)
    assert.equal(r.status, 400)
    const body = r.body as {error: string; errors: {pointer: string; message: string}[]}
    assert.match(body.error, /^server\.json is invalid: \/description: is required/)
    assert.deepEqual(
      body.errors.map((e) => e.pointer),
      ['/description', '/version', '/packages/0/transport/url'],
    )
    // Our name rule on top of the schema's: a namespace cannot start with a dot.
    const dotted = await send(
      s.url,
      'POST',
      `${API}/publish`,
      server('.io.team-a/x', '1.0.0'),
      tokens.alice,
    )
    assert.equal(dotted.status, 400)
    assert.match((dotted.body as {error: string}).error, /\/name: /)
  })

  test('re-publishing a version is a 409; a new version moves latest', async () => {
    const again = await send(
      s.url,
      'POST',
      `${API}/publish`,
      server('io.team-a/weather', '1.0.0', {description: 'changed'}),
      tokens.alice,
    )
    assert.equal(again.status, 409)
    assert.equal(
      (again.body as {error: string}).error,
      'version 1.0.0 of io.team-a/weather is already published; publish a new version',
    )
    const v2 = await send(
      s.url,
      'POST',
      `${API}/publish`,
      server('io.team-a/weather', '1.2.0'),
      tokens.alice,
    )
    assert.equal(v2.status, 200, v2.text)
    const versions = await getJson(`${s.url}${API}/servers/io.team-a%2Fweather/versions`, {
      headers: {authorization: `Bearer ${tokens.alice}`},
    })
    const list = (
      versions.body as {
        servers: {
          server: {version: string; description: string}
          _meta: Record<string, {isLatest: boolean}>
        }[]
      }
    ).servers
    assert.deepEqual(
      list.map((e) => [
        e.server.version,
        e._meta['io.modelcontextprotocol.registry/official']!.isLatest,
      ]),
      [
        ['1.0.0', false],
        ['1.2.0', true],
      ],
    )
    assert.equal(list[0]!.server.description, 'The weather server', 'the 409 changed nothing')
  })

  test('who may publish what: namespaces, unscoped grants, forbids, no token', async () => {
    const other = await send(
      s.url,
      'POST',
      `${API}/publish`,
      server('io.team-b/tool', '1.0.0'),
      tokens.alice,
    )
    assert.equal(other.status, 403)
    assert.equal(
      (other.body as {error: string}).error,
      'not permitted to publish io.team-b/tool in registry "default"',
    )
    const bob = await send(
      s.url,
      'POST',
      `${API}/publish`,
      server('io.team-a/tool', '1.0.0'),
      tokens.bob,
    )
    assert.equal(bob.status, 403)
    const legacy = await send(
      s.url,
      'POST',
      `${API}/publish`,
      server('io.team-a/tool', '1.0.0'),
      tokens.legacy,
    )
    assert.equal(legacy.status, 403, 'a permit with an unscoped action does not grant publishing')
    const reserved = await send(
      s.url,
      'POST',
      `${API}/publish`,
      server('io.team-a.reserved/x', '1.0.0'),
      tokens.alice,
    )
    assert.equal(reserved.status, 403)
    const anonymous = await send(s.url, 'POST', `${API}/publish`, server('io.team-a/tool', '1.0.0'))
    assert.equal(anonymous.status, 401)
    const listed = await getJson(`${s.url}${API}/servers?search=tool`, {
      headers: {authorization: `Bearer ${tokens.admin}`},
    })
    assert.equal(
      (listed.body as {servers: unknown[]}).servers.length,
      0,
      'nothing refused was stored',
    )
  })

  test('a name another source serves stays that source’s (409); a registry without a managed source refuses (403)', async () => {
    const taken = await send(
      s.url,
      'POST',
      `${API}/publish`,
      server('io.vendor/mirror', '3.0.0'),
      tokens.alice,
    )
    assert.equal(taken.status, 409, taken.text)
    assert.equal(
      (taken.body as {error: string}).error,
      'io.vendor/mirror is served from another source of registry "default"; publish under a name of your own',
    )
    const fresh = await send(
      s.url,
      'POST',
      `${API}/publish`,
      server('io.vendor/fresh', '1.0.0'),
      tokens.alice,
    )
    assert.equal(fresh.status, 200, 'a name of its own in the same namespace is fine')
    const ro = await send(
      s.url,
      'POST',
      '/registry/readonly/v0.1/publish',
      server('io.team-a/x', '1.0.0'),
      tokens.alice,
    )
    assert.equal(ro.status, 403)
    assert.match((ro.body as {error: string}).error, /registry "readonly" has no managed source/)
    const none = await send(
      s.url,
      'POST',
      '/registry/nope/v0.1/publish',
      server('io.team-a/x', '1.0.0'),
      tokens.alice,
    )
    assert.equal(none.status, 404)
    assert.equal((none.body as {error: string}).error, 'registry not found')
  })

  test('status changes: admin deprecates and deletes, latest moves, others may not', async () => {
    const denied = await send(
      s.url,
      'PATCH',
      statusPath('io.team-a/weather', '1.2.0'),
      {status: 'deleted'},
      tokens.alice,
    )
    assert.equal(denied.status, 403)
    const del = await send(
      s.url,
      'PATCH',
      statusPath('io.team-a/weather', '1.2.0'),
      {status: 'deleted'},
      tokens.admin,
    )
    assert.equal(del.status, 200, del.text)
    const latest = await getJson(`${s.url}${API}/servers?version=latest&search=weather`, {
      headers: {authorization: `Bearer ${tokens.bob}`},
    })
    const entries = (latest.body as {servers: {server: {version: string}}[]}).servers
    assert.deepEqual(
      entries.map((e) => e.server.version),
      ['1.0.0'],
      'a deleted version is not latest',
    )
    const gone = await getJson(`${s.url}${API}/servers/io.team-a%2Fweather/versions/1.2.0`, {
      headers: {authorization: `Bearer ${tokens.bob}`},
    })
    const meta = (gone.body as {_meta: Record<string, {status: string}>})._meta
    assert.equal(meta['io.modelcontextprotocol.registry/official']!.status, 'deleted')
    const back = await send(
      s.url,
      'PATCH',
      statusPath('io.team-a/weather', '1.2.0'),
      {status: 'active'},
      tokens.admin,
    )
    assert.equal(back.status, 200)
    const missing = await send(
      s.url,
      'PATCH',
      statusPath('io.team-a/weather', '9.9.9'),
      {status: 'active'},
      tokens.admin,
    )
    assert.equal(missing.status, 404)
    const latestPath = await send(
      s.url,
      'PATCH',
      statusPath('io.team-a/weather', 'latest'),
      {status: 'active'},
      tokens.admin,
    )
    assert.equal(latestPath.status, 400)
    const badStatus = await send(
      s.url,
      'PATCH',
      statusPath('io.team-a/weather', '1.2.0'),
      {status: 'gone'},
      tokens.admin,
    )
    assert.equal(badStatus.status, 400)
    assert.equal(
      (badStatus.body as {error: string}).error,
      '/status: must be one of active, deprecated, deleted',
    )
  })

  test('what a sync would refuse is refused at publish: control characters, hostile depth', async () => {
    const bell = await send(
      s.url,
      'POST',
      `${API}/publish`,
      server('io.team-a/bell', '1.0.0\u0007'),
      tokens.alice,
    )
    assert.equal(bell.status, 400)
    assert.match((bell.body as {error: string}).error, /\/version: /)
    let deep: Record<string, unknown> = {leaf: true}
    for (let i = 0; i < 200; i++) deep = {d: deep}
    const nested = await send(
      s.url,
      'POST',
      `${API}/publish`,
      server('io.team-a/deep', '1.0.0', {_meta: deep}),
      tokens.alice,
    )
    assert.equal(nested.status, 400)
    assert.match(
      (nested.body as {error: string}).error,
      /\/_meta: must not nest objects or arrays more than 64 deep/,
    )
    // Nothing was stored: the same name publishes cleanly afterwards.
    const clean = await send(
      s.url,
      'POST',
      `${API}/publish`,
      server('io.team-a/deep', '1.0.0'),
      tokens.alice,
    )
    assert.equal(clean.status, 200, clean.text)
  })

  test('a retry of the same document is a 200, not a conflict', async () => {
    const doc = server('io.team-a/retry', '1.0.0')
    const first = await send(s.url, 'POST', `${API}/publish`, doc, tokens.alice)
    const again = await send(s.url, 'POST', `${API}/publish`, doc, tokens.alice)
    assert.equal(first.status, 200)
    assert.equal(again.status, 200, again.text)
    assert.deepEqual(again.body, first.body)
  })

  test('writes need a token even on a public path; the registry is checked before the body', async () => {
    const anonymous = await send(s.url, 'POST', `${API}/publish`, server('io.team-a/anon', '1.0.0'))
    assert.equal(anonymous.status, 401)
    assert.match(anonymous.headers.get('www-authenticate') ?? '', /^Bearer /)
    const read = await getJson(`${s.url}${API}/servers?search=weather`)
    assert.equal(read.status, 200, 'reading the public path needs none')
    const unknown = await send(s.url, 'POST', '/registry/nope/v0.1/publish', 'x', tokens.alice, {
      'content-type': 'text/plain',
    })
    assert.equal(unknown.status, 404, 'an unknown registry is named before the body is judged')
  })

  test('hostile bodies: not JSON, duplicate keys, a BOM, too large, wrong type, wrong method', async () => {
    const form = await send(s.url, 'POST', `${API}/publish`, 'name=x', tokens.alice, {
      'content-type': 'application/x-www-form-urlencoded',
    })
    assert.equal(form.status, 415)
    const notJson = await send(s.url, 'POST', `${API}/publish`, '{"name":', tokens.alice)
    assert.equal(notJson.status, 400)
    // The policy would judge one name and the store keep the other: refused outright.
    const dup = await send(
      s.url,
      'POST',
      `${API}/publish`,
      '{"name":"io.team-a/ok","name":"io.team-b/sneaky","version":"1.0.0","description":"d"}',
      tokens.alice,
    )
    assert.equal(dup.status, 400)
    assert.match((dup.body as {error: string}).error, /duplicate key "name"/)
    const bom = await send(
      s.url,
      'POST',
      `${API}/publish`,
      '\ufeff' + JSON.stringify(server('io.team-a/b', '1.0.0')),
      tokens.alice,
    )
    assert.equal(bom.status, 400)
    const huge = await send(
      s.url,
      'POST',
      `${API}/publish`,
      server('io.team-a/huge', '1.0.0', {_meta: {pad: 'x'.repeat(300_000)}}),
      tokens.alice,
    )
    assert.equal(huge.status, 413)
    const get = await getJson(`${s.url}${API}/publish`, {
      headers: {authorization: `Bearer ${tokens.alice}`},
    })
    assert.equal(get.status, 405)
    assert.equal(get.headers.get('allow'), 'POST')
    // A registry-owned block sent by the publisher is dropped, not trusted.
    const forged = await send(
      s.url,
      'POST',
      `${API}/publish`,
      server('io.team-a/forged', '1.0.0', {
        _meta: {
          'io.modelcontextprotocol.registry/official': {
            status: 'deleted',
            publishedAt: '2000-01-01T00:00:00Z',
          },
          'io.team-a/owner': 'alice',
        },
      }),
      tokens.alice,
    )
    assert.equal(forged.status, 200, forged.text)
    const meta = forged.body as {
      server: {_meta: unknown}
      _meta: Record<string, {status: string; publishedAt: string}>
    }
    assert.deepEqual(meta.server._meta, {'io.team-a/owner': 'alice'})
    assert.equal(meta._meta['io.modelcontextprotocol.registry/official']!.status, 'active')
    assert.notEqual(
      meta._meta['io.modelcontextprotocol.registry/official']!.publishedAt,
      '2000-01-01T00:00:00.000Z',
    )
  })

  test('the audit log records who published what and which policy allowed it', async () => {
    const lines = readFileSync(join(dir, 'audit.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    const published = lines.filter((l) => l.event === 'registry_publish')
    const ok = published.find(
      (l) => l.server === 'io.team-a/weather' && l.version === '1.0.0' && l.outcome === 'success',
    )
    assert.ok(ok, 'the first publish is audited')
    assert.equal(ok.action, 'publish')
    assert.equal(ok.decision, 'allow')
    assert.deepEqual(ok.policies, ['policy1'])
    assert.equal((ok.principal as {subject: string}).subject, 'alice')
    const refused = published.find((l) => l.server === 'io.team-b/tool' && l.status === 403)
    assert.equal(refused?.decision, 'deny')
    const status = published.find(
      (l) => l.action === 'set_status' && l.newStatus === 'deleted' && l.status === 200,
    )
    assert.ok(status, 'the status change is audited')
    assert.deepEqual(status.policies, ['policy3'])
  })
})

describe('serve: publishing without a policy, anonymous mode', () => {
  test('is refused with a message that says what is missing', async () => {
    const dir = tempDir()
    const config = writeConfig(
      dir,
      'serve.yaml',
      'sources:\n  - name: team\n    managed: {}\nauth: {mode: anonymous}\n',
    )
    const s = await startServe(['--config', config], {dir})
    try {
      const r = await send(s.url, 'POST', `${API}/publish`, server('io.x/a', '1.0.0'))
      assert.equal(r.status, 403)
      assert.equal(
        (r.body as {error: string}).error,
        'publish needs a registry policy (auth.authz) that permits Action::"publish"',
      )
    } finally {
      await s.stop()
      rmSync(dir, {recursive: true, force: true})
    }
  })
})

describe('serve: publishing on PostgreSQL with two replicas', {skip: postgresMissing}, () => {
  after(() => stopStoreBackends())

  test('a publish on one replica is listed on the other within a second', async () => {
    const cluster = await pgCluster()
    const url = await cluster.createDatabase()
    const dir = tempDir()
    writeConfig(
      dir,
      'policy.json',
      JSON.stringify({
        ...POLICY,
        cedar: {
          ...POLICY.cedar,
          policies: [
            'permit(principal, action in [Action::"list_servers", Action::"get_server"], resource);',
            'permit(principal, action in [Action::"publish", Action::"set_status"], resource) when { resource.namespace == "io.pg" };',
          ],
        },
      }),
    )
    const config = writeConfig(
      dir,
      'serve.yaml',
      `sources:\n  - name: team\n    managed: {}\nauth:\n  mode: anonymous\n  authz: {policyFile: ./policy.json}\nstorage:\n  postgres: {url: "${url}"}\n`,
    )
    const a = await startServe(['--config', config], {dir})
    const b = await startServe(['--config', config], {dir})
    try {
      const published = await send(a.url, 'POST', `${API}/publish`, server('io.pg/one', '1.0.0'))
      assert.equal(published.status, 200, published.text)
      const seen = async (base: string, query: string) => {
        const end = Date.now() + 1000
        for (;;) {
          const r = await getJson(`${base}${API}/servers?${query}`)
          const found = (r.body as {servers: {server: {version: string}}[]}).servers.map(
            (e) => e.server.version,
          )
          if (found.length > 0) return found
          if (Date.now() > end) return found
          await new Promise((r) => setTimeout(r, 25))
        }
      }
      assert.deepEqual(await seen(b.url, 'search=one'), ['1.0.0'], 'replica B lists it within 1 s')
      // Concurrent publishes through both replicas: both land, one version each.
      const [x, y] = await Promise.all([
        send(a.url, 'POST', `${API}/publish`, server('io.pg/one', '1.1.0')),
        send(b.url, 'POST', `${API}/publish`, server('io.pg/one', '1.2.0')),
      ])
      assert.equal(x.status, 200, x.text)
      assert.equal(y.status, 200, y.text)
      const dup = await send(
        b.url,
        'POST',
        `${API}/publish`,
        server('io.pg/one', '1.1.0', {description: 'another document'}),
      )
      assert.equal(dup.status, 409)
      const retry = await send(b.url, 'POST', `${API}/publish`, server('io.pg/one', '1.1.0'))
      assert.equal(retry.status, 200, 'the same document again is a retry')
      const versions = await getJson(`${a.url}${API}/servers/io.pg%2Fone/versions`)
      assert.deepEqual(
        (versions.body as {servers: {server: {version: string}}[]}).servers.map(
          (e) => e.server.version,
        ),
        ['1.0.0', '1.1.0', '1.2.0'],
      )
      const del = await send(b.url, 'PATCH', statusPath('io.pg/one', '1.2.0'), {status: 'deleted'})
      assert.equal(del.status, 200, del.text)
      assert.deepEqual(await seen(a.url, 'version=latest'), ['1.1.0'])
    } finally {
      await a.stop()
      await b.stop()
      rmSync(dir, {recursive: true, force: true})
    }
  })
})
