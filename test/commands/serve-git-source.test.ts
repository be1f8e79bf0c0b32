/**
 * Git sources of `toolgate serve` (issue 36) against real git servers on loopback: `git daemon`
 * for the sync cycle (initial load, a new commit picked up, a force-push to a broken file keeps
 * the last good data, a tag as the ref), and `git http-backend` behind HTTP Basic for a token from
 * a file — which never shows in a message, a log line, or git's command line — and a real sshd
 * for a deploy key, whose host must be in the known_hosts given.
 */
import {after, before, describe, test} from 'node:test'
import assert from 'node:assert/strict'
import {rmSync, writeFileSync} from 'node:fs'
import {createServer} from 'node:http'
import type {AddressInfo} from 'node:net'
import {userInfo} from 'node:os'
import {join} from 'node:path'
import {
  createRepo,
  startGitDaemon,
  startGitHttp,
  type GitDaemon,
  type GitRepo,
} from '../helpers/git-server.ts'
import {
  getJson,
  runServe,
  startServe,
  tempDir,
  writeConfig,
  type ServeProcess,
} from '../helpers/serve-process.ts'
import {startSshd, sshdMissing} from '../helpers/sshd.ts'
import {forwardProxyMissing, startForwardProxy} from '../helpers/forward-proxy.ts'
import {needs} from '../helpers/component.ts'

const registryFile = (names: string[], version = '1.0.0') =>
  JSON.stringify({
    version: '1.0.0',
    data: {servers: names.map((name) => ({name, version, description: `${name} from git`}))},
  })

async function names(s: ServeProcess): Promise<string[]> {
  const r = await getJson(`${s.url}/registry/default/v0.1/servers?version=latest`)
  return (r.body as {servers: {server: {name: string}}[]}).servers.map((e) => e.server.name)
}

async function eventually(what: string, check: () => Promise<boolean>, ms = 15_000) {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

describe('serve: a git source over git://', () => {
  let repo: GitRepo
  let daemon: GitDaemon
  let s: ServeProcess
  let dir: string

  before(async () => {
    repo = createRepo()
    repo.commit({'registry.json': registryFile(['io.git/one'])})
    repo.commit({'registry.json': registryFile(['io.git/tagged'])}, {branch: 'release', tag: 'v1'})
    daemon = await startGitDaemon(repo.root)
    dir = tempDir()
    const config = writeConfig(
      dir,
      'serve.yaml',
      `sources:
  - name: team-git
    git: {url: "${daemon.url}/registry.git", ref: main, path: registry.json}
    syncPolicy: {interval: 300ms}
  - name: tagged
    git: {url: "${daemon.url}/registry.git", ref: v1, path: registry.json}
    syncPolicy: {interval: 1h}
auth: {mode: anonymous}
`,
    )
    s = await startServe(['--config', config], {dir, env: {XDG_DATA_HOME: join(dir, 'data')}})
  })

  after(async () => {
    await s?.stop()
    await daemon?.close()
    repo?.destroy()
    if (dir) rmSync(dir, {recursive: true, force: true})
  })

  test('the initial sync serves the file at the ref (a branch, and a tag)', async () => {
    assert.deepEqual(await names(s), ['io.git/one', 'io.git/tagged'])
  })

  test('a new commit is picked up on the next interval', async () => {
    repo.commit({'registry.json': registryFile(['io.git/one', 'io.git/two'])})
    await eventually('the new commit', async () => (await names(s)).includes('io.git/two'))
    // Three more intervals without a commit: fetched, but nothing re-read or re-synced.
    await new Promise((r) => setTimeout(r, 1000))
    const synced = s.stderr().match(/registry source synced.*source=team-git/g) ?? []
    assert.equal(synced.length, 2, 'one sync per commit, not one per interval')
  })

  test('a force-push to a broken file keeps the last good data, and says so', async () => {
    repo.commit({'registry.json': '{"data": {"servers": [ oops'}, {force: true})
    await eventually('a failed sync in the log', async () =>
      /registry source reload failed; serving the last good data.*team-git/.test(s.stderr()),
    )
    assert.deepEqual(await names(s), ['io.git/one', 'io.git/tagged', 'io.git/two'])
    const metrics = await (await fetch(`${s.internalUrl}/metrics`)).text()
    assert.match(metrics, /^toolgate_source_sync_errors_total\{source="team-git"\} [1-9]/m)
    // Mended by the next push.
    repo.commit({'registry.json': registryFile(['io.git/three'])})
    await eventually('the mended file', async () => (await names(s)).includes('io.git/three'))
    assert.deepEqual(await names(s), ['io.git/tagged', 'io.git/three'])
  })
})

describe('serve: a git source over https-style smart HTTP with a token file', () => {
  let repo: GitRepo
  let dir: string

  before(() => {
    repo = createRepo()
    repo.commit({'servers/registry.json': registryFile(['io.private/tool'])})
    dir = tempDir()
  })
  after(() => {
    repo?.destroy()
    if (dir) rmSync(dir, {recursive: true, force: true})
  })

  const config = (url: string, tokenFile: string) =>
    writeConfig(
      dir,
      'serve.yaml',
      `sources:
  - name: private
    git: {url: "${url}/registry.git", path: servers/registry.json, tokenFile: ${tokenFile}, username: ci}
    syncPolicy: {interval: 1h}
auth: {mode: anonymous}
`,
    )

  test('the token from the file authenticates; a wrong one fails naming the source, never the token', async () => {
    const token = 'ghp_s3cretTokenValue_1234567890'
    const http = await startGitHttp(repo.root, 'ci', token)
    try {
      writeFileSync(join(dir, 'token'), token + '\n', {mode: 0o600})
      const s = await startServe(['--config', config(http.url, './token')], {
        dir,
        env: {XDG_DATA_HOME: join(dir, 'data')},
      })
      try {
        assert.deepEqual(await names(s), ['io.private/tool'])
        assert.ok(!s.stderr().includes(token) && !s.stdout().includes(token), 'no token in logs')
      } finally {
        await s.stop()
      }
      writeFileSync(join(dir, 'wrong'), 'not-the-token', {mode: 0o600})
      const bad = await runServe(['--config', config(http.url, './wrong')], {
        dir,
        env: {XDG_DATA_HOME: join(dir, 'data2')},
      })
      assert.notEqual(bad.code, 0)
      assert.match(
        bad.stderr,
        /source "private": http:\/\/127\.0\.0\.1:\d+\/registry\.git HEAD:servers\/registry\.json: the server refused the credentials \(check tokenFile and username\)/,
      )
      assert.ok(!bad.stderr.includes('not-the-token'), 'the wrong token is not echoed either')
      assert.ok(
        http.authorizations.some(
          (a) => a === `Basic ${Buffer.from(`ci:${token}`).toString('base64')}`,
        ),
        'git sent the Basic credentials',
      )
    } finally {
      await http.close()
    }
  })

  test('a redirect is not followed: the token never reaches the host it points to', async () => {
    const seen: string[] = []
    const evil = createServer((req, res) => {
      seen.push(req.headers.authorization ?? '(none)')
      res.writeHead(404).end()
    })
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r))
    const evilUrl = `http://127.0.0.1:${(evil.address() as AddressInfo).port}`
    const redirector = createServer((req, res) => {
      res.writeHead(302, {location: `${evilUrl}${req.url ?? '/'}`}).end()
    })
    await new Promise<void>((r) => redirector.listen(0, '127.0.0.1', r))
    const from = `http://127.0.0.1:${(redirector.address() as AddressInfo).port}`
    try {
      writeFileSync(join(dir, 'token'), 'redirected-secret', {mode: 0o600})
      const r = await runServe(['--config', config(from, './token')], {
        dir,
        env: {XDG_DATA_HOME: join(dir, 'data3')},
      })
      assert.equal(r.code, 78, r.stderr)
      assert.ok(!r.stderr.includes('redirected-secret'))
      assert.deepEqual(seen, [], 'the other host was never asked')
    } finally {
      evil.close()
      redirector.close()
    }
  })

  test('configuration mistakes are named before anything runs', async () => {
    const cases: [string, RegExp][] = [
      [
        `git: {url: "ext::sh -c touch% /tmp/pwned", path: r.json}`,
        /sources\[0\]\.git\.url: is not a git URL/,
      ],
      [
        `git: {url: "https://user:pw@example.com/r.git", path: r.json}`,
        /git\.url: must not hold credentials/,
      ],
      [`git: {url: "--upload-pack=evil", path: r.json}`, /git\.url: is not a git URL/],
      [
        `git: {url: "https://example.com/r.git", path: ../etc/passwd}`,
        /git\.path: must be a relative path/,
      ],
      [
        `git: {url: "https://example.com/r.git", path: r.json, ref: "-x"}`,
        /git\.ref: must be a branch/,
      ],
      [
        `git: {url: "git://example.com/r.git", path: r.json, tokenFile: ./token}`,
        /git\.tokenFile: is for https/,
      ],
      [
        `git: {url: "http://git.example.com/r.git", path: r.json, tokenFile: ./token}`,
        /git\.tokenFile: needs an https:\/\/ URL/,
      ],
      [`git: {url: "host::evil", path: r.json}`, /git\.url: is not a git URL/],
    ]
    writeFileSync(join(dir, 'token'), 'x', {mode: 0o600})
    for (const [git, problem] of cases) {
      const file = writeConfig(
        dir,
        'bad.yaml',
        `sources:\n  - name: g\n    ${git}\n    syncPolicy: {interval: 1m}\nauth: {mode: anonymous}\n`,
      )
      const r = await runServe(['--config', file], {dir})
      assert.equal(r.code, 78, `${git}: ${r.stderr}`)
      assert.match(r.stderr, problem, git)
    }
    const noInterval = writeConfig(
      dir,
      'bad.yaml',
      `sources:\n  - name: g\n    git: {url: "https://example.com/r.git", path: r.json}\nauth: {mode: anonymous}\n`,
    )
    const r = await runServe(['--config', noInterval], {dir})
    assert.match(r.stderr, /sources\[0\]\.syncPolicy\.interval: is required for a git source/)
  })
})

describe('serve: a git source over ssh with a deploy key', {skip: sshdMissing}, () => {
  test('the key and known_hosts are used; a host not in known_hosts is refused', async () => {
    const repo = createRepo()
    const dir = tempDir()
    const sshd = await startSshd(dir)
    try {
      repo.commit({'registry.json': registryFile(['io.ssh/tool'])})
      const config = (knownHosts: string) =>
        writeConfig(
          dir,
          'serve.yaml',
          `sources:
  - name: deploy
    git:
      url: "ssh://${userInfo().username}@127.0.0.1:${sshd.port}${repo.root}/registry.git"
      path: registry.json
      sshKeyFile: ${sshd.clientKey}
      knownHostsFile: ${knownHosts}
    syncPolicy: {interval: 1h}
auth: {mode: anonymous}
`,
        )
      const s = await startServe(['--config', config(sshd.knownHosts)], {
        dir,
        env: {XDG_DATA_HOME: join(dir, 'data')},
      })
      try {
        assert.deepEqual(await names(s), ['io.ssh/tool'])
      } finally {
        await s.stop()
      }
      // A server whose key is not known (a man in the middle, a moved host): never trusted on
      // first use.
      const mitm = await runServe(['--config', config(sshd.emptyKnownHosts)], {
        dir,
        env: {XDG_DATA_HOME: join(dir, 'data2')},
      })
      assert.equal(mitm.code, 78)
      assert.match(
        mitm.stderr,
        /source "deploy": ssh:\/\/127\.0\.0\.1:\d+\S+ HEAD:registry\.json: Host key verification failed/,
      )
    } finally {
      sshd.stop()
      repo.destroy()
      rmSync(dir, {recursive: true, force: true})
    }
  })
})

describe(
  'serve: a git source behind the corporate forward proxy',
  {
    skip: needs('tinyproxy and unshare (the corporate forward proxy)', forwardProxyMissing()),
  },
  () => {
    test('git goes through network.proxy like every other request serve makes', async () => {
      const repo = createRepo()
      repo.commit({'registry.json': registryFile(['io.corp/tool'])})
      const http = await startGitHttp(repo.root, '', '')
      const proxy = await startForwardProxy({hosts: ['git.corp.test']})
      const dir = tempDir()
      try {
        const port = new URL(http.url).port
        // Only the proxy can resolve git.corp.test: a fetch that bypassed it could not even start.
        const config = writeConfig(
          dir,
          'serve.yaml',
          `sources:
  - name: corp
    git: {url: "http://git.corp.test:${port}/registry.git", path: registry.json}
    syncPolicy: {interval: 1h}
network: {proxy: "${proxy.url}"}
auth: {mode: anonymous}
`,
        )
        const s = await startServe(['--config', config], {
          dir,
          env: {XDG_DATA_HOME: join(dir, 'data')},
        })
        try {
          assert.deepEqual(await names(s), ['io.corp/tool'])
          assert.ok(
            proxy.requests().some((r) => r.includes(`git.corp.test:${port}`)),
            proxy.requests().join('\n'),
          )
        } finally {
          await s.stop()
        }
      } finally {
        await proxy.close()
        await http.close()
        repo.destroy()
        rmSync(dir, {recursive: true, force: true})
      }
    })
  },
)
