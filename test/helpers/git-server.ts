/**
 * Real git servers on loopback for git sources (testing.md): `git daemon` (git://) and
 * `git http-backend` (the smart HTTP server git ships) behind a small node:http CGI bridge that
 * demands HTTP Basic credentials, as a forge does for a token. Repositories are changed with the
 * real git CLI: commit, push, force-push.
 */
import {execFileSync, spawn, type ChildProcess} from 'node:child_process'
import {mkdirSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import {dirname, join} from 'node:path'
import {freePort} from './postgres.ts'

const GIT_ENV = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'test',
  GIT_AUTHOR_EMAIL: 'test@example.test',
  GIT_COMMITTER_NAME: 'test',
  GIT_COMMITTER_EMAIL: 'test@example.test',
}

function git(args: string[], cwd?: string): string {
  return execFileSync('git', args, {cwd, env: GIT_ENV, encoding: 'utf8'})
}

export interface GitRepo {
  /** The directory holding `<name>.git` (the servers' root). */
  root: string
  name: string
  /** Commits `files` on `branch` and pushes it (`force`: a rewritten history). Returns the commit. */
  commit(
    files: Record<string, string>,
    opts?: {branch?: string; force?: boolean; tag?: string},
  ): string
  destroy(): void
}

export function createRepo(name = 'registry'): GitRepo {
  const root = mkdtempSync(join(tmpdir(), 'tg-git-'))
  const bare = join(root, `${name}.git`)
  git(['init', '--quiet', '--bare', '--initial-branch=main', bare])
  git(['--git-dir', bare, 'config', 'http.receivepack', 'true'])
  const work = join(root, 'work')
  mkdirSync(work)
  git(['init', '--quiet', '--initial-branch=main', work])
  return {
    root,
    name,
    commit(files, opts = {}) {
      const branch = opts.branch ?? 'main'
      if (opts.force) {
        // A rewritten history: a fresh root commit replaces the branch.
        git(['checkout', '--quiet', '--orphan', `rewrite-${Date.now()}`], work)
        git(['rm', '-rq', '--cached', '--ignore-unmatch', '.'], work)
      }
      for (const [file, text] of Object.entries(files)) {
        mkdirSync(dirname(join(work, file)), {recursive: true})
        writeFileSync(join(work, file), text)
      }
      git(['add', '.'], work)
      git(['commit', '--quiet', '-m', `update ${Date.now()}`], work)
      git(
        ['push', '--quiet', ...(opts.force ? ['--force'] : []), bare, `HEAD:refs/heads/${branch}`],
        work,
      )
      if (opts.tag) git(['push', '--quiet', '--force', bare, `HEAD:refs/tags/${opts.tag}`], work)
      return git(['rev-parse', 'HEAD'], work).trim()
    },
    destroy: () => rmSync(root, {recursive: true, force: true}),
  }
}

export interface GitDaemon {
  url: string
  close(): Promise<void>
}

/** `git daemon` serving every repository under `root` at git://127.0.0.1:<port>/. */
export async function startGitDaemon(root: string): Promise<GitDaemon> {
  const port = await freePort()
  const child: ChildProcess = spawn(
    'git',
    [
      'daemon',
      '--reuseaddr',
      '--export-all',
      `--base-path=${root}`,
      '--listen=127.0.0.1',
      `--port=${port}`,
      root,
    ],
    {stdio: ['ignore', 'ignore', 'pipe'], env: GIT_ENV},
  )
  let err = ''
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()))
  const url = `git://127.0.0.1:${port}`
  const end = Date.now() + 10_000
  for (;;) {
    try {
      git(['ls-remote', `${url}/nothing-here.git`])
    } catch (e) {
      // The daemon answers (a missing repository) once it listens.
      if (
        /not exported|does not appear|remote error/i.test(
          String((e as {stderr?: string}).stderr ?? e),
        )
      )
        break
    }
    if (Date.now() > end) throw new Error(`git daemon did not start: ${err}`)
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    url,
    close: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve())
        child.kill('SIGTERM')
      }),
  }
}

export interface GitHttp {
  url: string
  /** Authorization headers seen (to check what credentials arrived). */
  authorizations: string[]
  close(): Promise<void>
}

/** `git http-backend` over CGI, behind HTTP Basic `user`/`password` (none when user is ''). */
export async function startGitHttp(root: string, user: string, password: string): Promise<GitHttp> {
  const expected = user
    ? `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
    : undefined
  const authorizations: string[] = []
  const server: Server = createServer((req, res) => {
    authorizations.push(req.headers.authorization ?? '')
    if (expected !== undefined && req.headers.authorization !== expected) {
      res.writeHead(401, {'www-authenticate': 'Basic realm="git"'}).end('unauthorized')
      return
    }
    const u = new URL(req.url ?? '/', 'http://x')
    const cgi = spawn('git', ['http-backend'], {
      env: {
        ...GIT_ENV,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: decodeURIComponent(u.pathname),
        QUERY_STRING: u.search.slice(1),
        REQUEST_METHOD: req.method ?? 'GET',
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        REMOTE_USER: user,
        REMOTE_ADDR: '127.0.0.1',
        ...(req.headers['git-protocol'] ? {GIT_PROTOCOL: String(req.headers['git-protocol'])} : {}),
      },
      stdio: ['pipe', 'pipe', 'ignore'],
    })
    req.pipe(cgi.stdin)
    let head = Buffer.alloc(0)
    let started = false
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (started) return void res.write(chunk)
      head = Buffer.concat([head, chunk])
      const at = head.indexOf('\r\n\r\n')
      if (at === -1) return
      started = true
      let status = 200
      const headers: Record<string, string> = {}
      for (const line of head.subarray(0, at).toString().split('\r\n')) {
        const i = line.indexOf(':')
        const k = line.slice(0, i).trim().toLowerCase()
        const v = line.slice(i + 1).trim()
        if (k === 'status') status = Number(v.split(' ')[0])
        else headers[k] = v
      }
      res.writeHead(status, headers)
      res.write(head.subarray(at + 4))
    })
    cgi.stdout.on('end', () => res.end())
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    authorizations,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
