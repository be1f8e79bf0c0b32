/**
 * `toolgate registry list|search|show|publish|status` as a user runs them: the real command
 * against (1) `toolgate serve` in oauth mode with tokens from a real OpenID provider — a bearer
 * token file and a real client_credentials login — and (2) a server that answers in the official
 * registry's page and cursor format (`name:version` cursors, `metadata.count`), since the official
 * registry itself is not reachable from here. `--all` must walk every page, and a list cut short
 * must say so.
 */
import {after, before, describe, test} from 'node:test'
import assert from 'node:assert/strict'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {startOidcProvider, type OidcProviderFixture} from '../helpers/oidc-provider.ts'
import {createRequire} from 'node:module'
import {runCli} from '../helpers/proxy-run.ts'
import {mcpClient, runForeground, textOf} from '../helpers/workload.ts'
import {startServe, writeConfig, type ServeProcess} from '../helpers/serve-process.ts'

async function cli(args: string[], home: string, input?: string) {
  const run = runCli(args, home, {}, input)
  const code = await run.exited
  return {code, stdout: run.stdout(), stderr: run.stderr()}
}

const jsonLines = (text: string) =>
  text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)

describe('toolgate registry against toolgate serve (oauth, Cedar)', () => {
  let op: OidcProviderFixture
  let s: ServeProcess
  let home: string
  let base: string
  let tokenFile: string
  let secretFile: string

  before(async () => {
    op = await startOidcProvider({audience: 'api://registry'})
    home = mkdtempSync(join(tmpdir(), 'tg-registry-cli-'))
    const servers = Array.from({length: 250}, (_, i) => ({
      name: `io.mirror/tool-${String(i).padStart(3, '0')}`,
      version: '1.0.0',
      description: i % 50 === 0 ? 'A weather helper' : 'A helper',
    }))
    writeConfig(home, 'mirror.json', JSON.stringify(servers))
    writeConfig(
      home,
      'policy.json',
      JSON.stringify({
        version: '1.0',
        type: 'cedarv1',
        cedar: {
          policies: [
            'permit(principal, action in [Action::"list_servers", Action::"get_server"], resource);',
            'permit(principal in ToolgateGroup::"team-a", action in [Action::"publish", Action::"set_status"], resource) when { resource.namespace == "io.team-a" };',
            // The CI machine identity (client_credentials): its own namespace only.
            `permit(principal == Client::"${op.client.clientId}", action == Action::"publish", resource) when { resource.namespace == "io.ci" };`,
          ],
        },
      }),
    )
    const config = writeConfig(
      home,
      'serve.json',
      JSON.stringify({
        sources: [
          {name: 'team', managed: {}},
          {name: 'mirror', file: {path: './mirror.json'}},
        ],
        auth: {
          oauth: {
            resourceUrl: 'https://registry.example.test',
            providers: [
              {name: 'op', issuerUrl: op.issuer, audience: 'api://registry', allowPrivateIP: true},
            ],
          },
          authz: {policyFile: './policy.json'},
        },
      }),
    )
    s = await startServe(['--config', config], {dir: home})
    base = `${s.url}/registry/default`
    tokenFile = join(home, 'token')
    writeFileSync(
      tokenFile,
      await op.issueAccessToken({sub: 'alice', claims: {groups: ['team-a']}}),
      {mode: 0o600},
    )
    secretFile = join(home, 'client-secret')
    writeFileSync(secretFile, op.client.clientSecret, {mode: 0o600})
  })

  after(async () => {
    await s?.stop()
    await op?.close()
    if (home) rmSync(home, {recursive: true, force: true})
  })

  const auth = () => ['--registry', base, '--remote-auth-bearer-token-file', tokenFile]

  test('publish a file, then find it with search and show; status deprecates it', async () => {
    const file = join(home, 'server.json')
    writeFileSync(
      file,
      JSON.stringify({
        $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
        name: 'io.team-a/forecast',
        description: 'Team A forecast server',
        version: '2.1.0',
        packages: [
          {
            registryType: 'npm',
            identifier: '@team-a/forecast',
            version: '2.1.0',
            transport: {type: 'stdio'},
          },
        ],
      }),
    )
    const pub = await cli(['registry', 'publish', file, ...auth()], home)
    assert.equal(pub.code, 0, pub.stderr)
    assert.equal(pub.stdout.trim(), `published io.team-a/forecast 2.1.0 to ${base}/`)

    const found = await cli(['registry', 'search', 'FORECAST', ...auth()], home)
    assert.equal(found.code, 0, found.stderr)
    const rows = found.stdout.trim().split('\n')
    assert.match(rows[0]!, /^NAME\s+VERSION\s+STATUS\s+TRANSPORTS\s+DESCRIPTION$/)
    assert.match(
      rows[1]!,
      /^io\.team-a\/forecast\s+2\.1\.0\s+active\s+stdio\s+Team A forecast server$/,
    )

    const shown = await cli(['registry', 'show', 'io.team-a/forecast', ...auth()], home)
    assert.equal(shown.code, 0, shown.stderr)
    assert.match(shown.stdout, /^io\.team-a\/forecast 2\.1\.0 \(active, latest\)$/m)
    assert.match(shown.stdout, /package: +npm @team-a\/forecast@2\.1\.0 \(stdio\)/)

    const dep = await cli(
      ['registry', 'status', 'io.team-a/forecast@2.1.0', 'deprecated', ...auth(), '--json'],
      home,
    )
    assert.equal(dep.code, 0, dep.stderr)
    const [event] = jsonLines(dep.stdout)
    assert.equal(event!.event, 'status')
    const meta = event!._meta as Record<string, {status: string}>
    assert.equal(meta['io.modelcontextprotocol.registry/official']!.status, 'deprecated')

    // From stdin, and a second time: the registry's 409 is the command's error, exit 1.
    const again = await cli(
      ['registry', 'publish', '-', ...auth()],
      home,
      JSON.stringify({name: 'io.team-a/forecast', description: 'x', version: '2.1.0'}),
    )
    assert.equal(again.code, 1)
    assert.match(again.stderr, /409 version 2\.1\.0 of io\.team-a\/forecast is already published/)
  })

  test('publish, then run it from the protected registry with a token file', async () => {
    const version = (
      createRequire(import.meta.url)('@modelcontextprotocol/server-everything/package.json') as {
        version: string
      }
    ).version
    const pub = await cli(
      ['registry', 'publish', '-', ...auth()],
      home,
      JSON.stringify({
        name: 'io.team-a/everything',
        description: 'server-everything, installed locally',
        version,
        packages: [
          {
            registryType: 'npm',
            identifier: '@modelcontextprotocol/server-everything',
            version,
            transport: {type: 'stdio'},
            packageArguments: [{type: 'positional', value: 'stdio'}],
          },
        ],
      }),
    )
    assert.equal(pub.code, 0, pub.stderr)
    // Without the token the registry's 401 is named, with the flag that fixes it.
    const denied = await cli(
      ['run', 'no-token', '--no-sandbox', '--from-registry', base, 'io.team-a/everything'],
      home,
    )
    assert.equal(denied.code, 77)
    assert.match(
      denied.stderr,
      /answered 401: a protected registry; pass --from-registry-token-file/,
    )
    // --no-sandbox: the package is installed here; the sandbox would install it from npm.
    const w = await runForeground(
      'from-team',
      [
        '--no-sandbox',
        '--from-registry',
        base,
        '--from-registry-token-file',
        tokenFile,
        'io.team-a/everything',
      ],
      [],
      home,
    )
    try {
      const c = await mcpClient(w.url)
      assert.equal(
        textOf(await c.callTool({name: 'echo', arguments: {message: 'published'}})),
        'Echo: published',
      )
      await c.close()
    } finally {
      await w.stop()
    }
  })

  test('a schema error lists every problem; a namespace not permitted exits 77', async () => {
    const bad = await cli(
      ['registry', 'publish', '-', ...auth()],
      home,
      JSON.stringify({name: 'io.team-a/x', version: '1.x'}),
    )
    assert.equal(bad.code, 2)
    assert.match(bad.stderr, /400 server\.json is invalid: \/description: is required/)
    assert.match(bad.stderr, /^ {2}\/version: must be one exact version/m)
    const other = await cli(
      ['registry', 'publish', '-', ...auth()],
      home,
      JSON.stringify({name: 'io.other/x', description: 'x', version: '1.0.0'}),
    )
    assert.equal(other.code, 77)
    assert.match(other.stderr, /403 not permitted to publish io\.other\/x/)
    const noToken = await cli(['registry', 'list', '--registry', base], home)
    assert.equal(noToken.code, 77)
    assert.match(noToken.stderr, /401 .*pass --remote-auth or --remote-auth-bearer-token-file/)
    assert.doesNotMatch(noToken.stderr + other.stderr, /eyJ/, 'no token in any message')
  })

  test('a machine identity publishes with a real client_credentials login', async () => {
    const r = await cli(
      [
        'registry',
        'publish',
        '-',
        '--registry',
        base,
        '--remote-auth',
        '--remote-auth-grant',
        'client_credentials',
        '--remote-auth-issuer',
        op.issuer,
        '--remote-auth-client-id',
        op.client.clientId,
        '--remote-auth-client-secret-file',
        secretFile,
        '--json',
      ],
      home,
      JSON.stringify({name: 'io.ci/nightly', description: 'Built by CI', version: '0.0.1'}),
    )
    assert.equal(r.code, 0, r.stderr)
    const published = jsonLines(r.stdout).find((l) => l.event === 'published')
    assert.equal((published?.server as {name: string}).name, 'io.ci/nightly')
  })

  test('--all walks every page; --limit stops and says more match', async () => {
    const all = await cli(['registry', 'list', '--all', '--json', ...auth()], home)
    assert.equal(all.code, 0, all.stderr)
    const lines = jsonLines(all.stdout)
    const names = lines
      .filter((l) => l.event === 'server')
      .map((l) => (l.server as {name: string}).name)
    assert.equal(new Set(names).size, names.length, 'no duplicates across pages')
    assert.equal(names.filter((n) => n.startsWith('io.mirror/')).length, 250)
    assert.deepEqual(lines.at(-1), {event: 'end', count: names.length, more: false})

    const some = await cli(['registry', 'list', '--limit', '120', ...auth()], home)
    assert.equal(some.code, 0, some.stderr)
    assert.equal(some.stdout.trim().split('\n').length, 121, 'header and 120 rows')
    assert.match(some.stderr, /showing the first 120; more match: pass --all, or --limit N/)

    // Filters are applied by the registry, across pages: only the published stdio npm packages.
    const stdio = await cli(
      [
        'registry',
        'list',
        '--all',
        '--transport',
        'stdio',
        '--registry-type',
        'npm',
        '--json',
        ...auth(),
      ],
      home,
    )
    assert.equal(stdio.code, 0, stdio.stderr)
    const filtered = jsonLines(stdio.stdout).filter((l) => l.event === 'server')
    assert.deepEqual(
      filtered.map((l) => (l.server as {name: string}).name),
      ['io.team-a/everything', 'io.team-a/forecast'],
    )
    const remote = await cli(
      ['registry', 'list', '--all', '--type', 'remote', '--json', ...auth()],
      home,
    )
    assert.deepEqual(jsonLines(remote.stdout).at(-1), {event: 'end', count: 0, more: false})

    const all2 = await cli(['registry', 'list', '--all', '--limit', '5', ...auth()], home)
    assert.equal(all2.code, 2, '--all and --limit are alternatives')
  })
})

describe('toolgate registry against a registry in the official format', () => {
  let server: Server
  let url: string
  let home: string
  let requests: string[]

  before(async () => {
    home = mkdtempSync(join(tmpdir(), 'tg-registry-official-'))
    requests = []
    const entries = Array.from({length: 237}, (_, i) => ({
      server: {
        $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
        name: `io.github.user${String(i).padStart(3, '0')}/server`,
        description: i === 7 ? 'Evil \u001b]0;pwned\u0007\u001b[2J title' : `Server ${i}`,
        version: '1.0.0',
        remotes: [{type: 'streamable-http', url: `https://s${i}.example.com/mcp`}],
      },
      _meta: {
        'io.modelcontextprotocol.registry/official': {
          status: 'active',
          publishedAt: '2025-10-01T00:00:00Z',
          updatedAt: '2025-10-01T00:00:00Z',
          isLatest: true,
        },
      },
    }))
    // The official API: `cursor` is the `name:version` of the last entry of the previous page.
    server = createServer((req, res) => {
      const u = new URL(req.url ?? '/', 'http://x')
      requests.push(u.pathname + u.search)
      // A hostile registry: cursors that alternate for ever, escapes in every field a table shows.
      if (u.pathname === '/loop/v0.1/servers') {
        const next = u.searchParams.get('cursor') === 'A' ? 'B' : 'A'
        const evil = {
          server: {
            name: 'io.evil/x',
            version: '1.0.0',
            description: 'ok',
            packages: [
              {registryType: 'npm', identifier: 'x', transport: {type: '\u001b]0;PWNED\u0007'}},
            ],
          },
          _meta: {
            'io.modelcontextprotocol.registry/official': {status: '\u001b[2J', isLatest: true},
          },
          event: 'end',
        }
        res
          .writeHead(200, {'content-type': 'application/json'})
          // Elements that are not entries at all are left out, not a crash.
          .end(
            JSON.stringify({
              servers: [null, 'x', {server: 5}, evil],
              metadata: {count: 4, nextCursor: next},
            }),
          )
        return
      }
      if (u.pathname !== '/v0.1/servers') {
        res
          .writeHead(404, {'content-type': 'application/json'})
          .end('{"title":"Not Found","status":404}')
        return
      }
      const limit = Number(u.searchParams.get('limit') ?? 30)
      const cursor = u.searchParams.get('cursor')
      const start = cursor
        ? entries.findIndex((e) => `${e.server.name}:${e.server.version}` === cursor) + 1
        : 0
      const page = entries.slice(start, start + limit)
      const last = page.at(-1)
      const more = start + limit < entries.length
      res.writeHead(200, {'content-type': 'application/json'}).end(
        JSON.stringify({
          servers: page,
          metadata: {
            count: page.length,
            ...(more && last ? {nextCursor: `${last.server.name}:${last.server.version}`} : {}),
          },
        }),
      )
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })

  after(async () => {
    server?.close()
    if (home) rmSync(home, {recursive: true, force: true})
  })

  test('--all lists every entry of every page, with control characters neutralised', async () => {
    const r = await cli(['registry', 'list', '--all', '--registry', url], home)
    assert.equal(r.code, 0, r.stderr)
    const rows = r.stdout.trim().split('\n')
    assert.equal(rows.length, 238, 'header and 237 rows')
    assert.equal(r.stderr, '', 'nothing more to say: all shown')
    // eslint-disable-next-line no-control-regex -- control characters are what must not appear
    assert.doesNotMatch(r.stdout, /\u001b|\u0007/, 'no escape sequence reaches the terminal')
    assert.match(r.stdout, /io\.github\.user007\/server +1\.0\.0 +active +streamable-http +Evil/)
    assert.deepEqual(
      requests.filter((q) => q.startsWith('/v0.1/servers')).length,
      3,
      'three pages of 100',
    )
    assert.ok(
      requests.every((q) => q.includes('version=latest')),
      'the latest of each by default',
    )
  })

  test('a hostile registry: cursors that loop end the walk; escapes never reach the terminal', async () => {
    const looped = await cli(['registry', 'list', '--all', '--registry', `${url}/loop`], home)
    assert.equal(looped.code, 69)
    assert.match(looped.stderr, /answered a nextCursor it had already given/)
    const shown = await cli(['registry', 'list', '--limit', '1', '--registry', `${url}/loop`], home)
    assert.equal(shown.code, 0, shown.stderr)
    // eslint-disable-next-line no-control-regex -- control characters are what must not appear
    assert.doesNotMatch(shown.stdout + shown.stderr, /[\u0000-\u0008\u000b-\u001f]/)
    const json = await cli(
      ['registry', 'list', '--limit', '1', '--json', '--registry', `${url}/loop`],
      home,
    )
    assert.deepEqual(
      jsonLines(json.stdout).map((l) => l.event),
      ['server', 'end'],
      'an entry cannot pass itself off as another event',
    )
  })

  test('a token never goes over plain http to another machine', async () => {
    const r = await cli(
      [
        'registry',
        'list',
        '--registry',
        'http://registry.example.test/registry/x',
        '--remote-auth-bearer-token',
        'abc',
      ],
      home,
    )
    assert.equal(r.code, 2)
    assert.match(r.stderr, /a token goes over https only/)
  })

  test('the base URL may be given with /v0.1 or a trailing slash', async () => {
    for (const given of [`${url}/`, `${url}/v0.1`, `${url}/v0.1/servers`]) {
      const r = await cli(['registry', 'list', '--limit', '2', '--registry', given, '--json'], home)
      assert.equal(r.code, 0, `${given}: ${r.stderr}`)
      assert.deepEqual(jsonLines(r.stdout).at(-1), {event: 'end', count: 2, more: true})
    }
    const bad = await cli(['registry', 'list', '--registry', 'ftp://x'], home)
    assert.equal(bad.code, 2)
    assert.match(bad.stderr, /--registry: the registry URL must be http\(s\)/)
  })
})
