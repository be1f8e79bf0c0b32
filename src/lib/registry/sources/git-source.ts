import {execFile} from 'node:child_process'
import {createHash} from 'node:crypto'
import {existsSync, mkdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {xdgDirs} from '../../config/xdg.ts'
import {ToolgateError} from '../../errors.ts'
import {readSecretFile} from '../../fs/secret-file.ts'
import {currentNetwork, proxyFor} from '../../network/settings.ts'
import type {GitSourceConfig} from '../types.ts'
import {streamRegistryDocument} from './document.ts'
import {MAX_DOCUMENT_BYTES} from './file-source.ts'
import type {LoadResult, SourceLoader, Unchanged} from './loader.ts'
import {describeUrl} from './location.ts'

/**
 * A `git` source (docs/registry-publish.md "Git sources"): a registry file in a git repository,
 * fetched with the system git — shallow, one commit, into a bare repository of its own under the
 * data directory — and read at that commit. A sync whose commit is the last good one changes
 * nothing; a new commit whose file is broken fails the sync, and the last good data stays served.
 *
 * Credentials never reach a command line (other users see those in `ps`) nor a log: the token
 * goes to git as configuration in its environment, the ssh key as an ssh option in
 * GIT_SSH_COMMAND. Only the transports named in GIT_ALLOW_PROTOCOL run: `ext::` (which runs a
 * command) and friends are refused by git itself.
 */
const ALLOWED_PROTOCOLS = 'https:http:ssh:git:file'
const GIT_TIMEOUT_MS = 120_000

export function defaultGitDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(xdgDirs(env).data, 'git-sources')
}

export class GitLoader implements SourceLoader {
  readonly location: string
  readonly #config: GitSourceConfig
  readonly #dir: string
  #caWritten: string | undefined

  constructor(config: GitSourceConfig, gitRoot: string) {
    this.#config = config
    const ref = config.ref ?? 'HEAD'
    this.location = `${describeGitUrl(config.url)} ${ref}:${config.path}`
    // One repository per source and URL: a changed URL starts clean instead of mixing histories.
    const id = createHash('sha256').update(config.url).digest('hex').slice(0, 12)
    this.#dir = join(gitRoot, `${config.name}-${id}.git`)
  }

  async load(signal?: AbortSignal, lastVersion?: string): Promise<LoadResult | Unchanged> {
    if (!existsSync(join(this.#dir, 'HEAD'))) {
      mkdirSync(this.#dir, {recursive: true, mode: 0o700})
      await this.#git(['init', '--quiet', '--bare', this.#dir], signal, false)
    }
    const ref = this.#config.ref ?? 'HEAD'
    await this.#git(
      [
        '--git-dir',
        this.#dir,
        'fetch',
        '--quiet',
        '--depth=1',
        '--no-tags',
        '--',
        this.#config.url,
        ref,
      ],
      signal,
      true,
    )
    const commit = (
      await this.#git(
        ['--git-dir', this.#dir, 'rev-parse', '--verify', 'FETCH_HEAD^{commit}'],
        signal,
        false,
      )
    )
      .toString()
      .trim()
    if (commit === lastVersion) return {unchanged: true, version: commit}
    let bytes: Buffer
    try {
      bytes = await this.#git(
        ['--git-dir', this.#dir, 'show', `${commit}:${this.#config.path}`],
        signal,
        false,
      )
    } catch (err) {
      throw new ToolgateError(
        'ERR_SOURCE_LOAD',
        `${this.location}: no such file at commit ${commit.slice(0, 12)}`,
        {cause: err},
      )
    }
    return {
      records: streamRegistryDocument(bytes, `${this.location} (${commit.slice(0, 12)})`),
      trustOfficialMeta: false,
      version: commit,
    }
  }

  /** Runs git with a bounded time and output; its own words (never credentials) in errors. */
  #git(args: string[], signal: AbortSignal | undefined, remote: boolean): Promise<Buffer> {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LANG: 'C',
      GIT_TERMINAL_PROMPT: '0',
      GIT_ALLOW_PROTOCOL: ALLOWED_PROTOCOLS,
      // Never the user's or the system's git config (credential helpers, url rewrites, hooks).
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
    }
    if (remote) Object.assign(env, this.#credentials(this.#network()))
    return new Promise((resolve, reject) => {
      execFile(
        'git',
        args,
        {env, encoding: 'buffer', maxBuffer: MAX_DOCUMENT_BYTES, timeout: GIT_TIMEOUT_MS, signal},
        (err, stdout, stderr) => {
          if (!err) return resolve(stdout)
          const code = (err as NodeJS.ErrnoException).code
          const why =
            code === 'ENOENT'
              ? 'git is not installed (the git package)'
              : code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER'
                ? `the file is larger than ${MAX_DOCUMENT_BYTES / 1024 / 1024} MiB`
                : (err as {killed?: boolean}).killed
                  ? `git took longer than ${GIT_TIMEOUT_MS / 1000} s`
                  : this.#explain(reasonOf(stderr.toString()))
          reject(
            new ToolgateError(
              'ERR_SOURCE_LOAD',
              `${this.location}: ${redact(why, this.#config.url)}`,
              {cause: err},
            ),
          )
        },
      )
    })
  }

  /** git asks for a user name when a server refuses what it sent: say that plainly. */
  #explain(reason: string): string {
    if (!/could not read (Username|Password)|terminal prompts disabled/i.test(reason)) return reason
    return this.#config.tokenFile
      ? 'the server refused the credentials (check tokenFile and username)'
      : 'the repository needs credentials: set tokenFile (https) or use an ssh URL with sshKeyFile'
  }

  /**
   * The outbound proxy and trust of every other request toolgate makes (docs/network.md), as git
   * configuration: git is given none of the environment's proxy variables itself.
   */
  #network(): [string, string][] {
    if (!/^https?:\/\//i.test(this.#config.url)) return []
    const settings = currentNetwork()
    const out: [string, string][] = []
    const proxy = proxyFor(settings, new URL(this.#config.url))
    if (proxy) out.push(['http.proxy', proxy.href])
    if (settings.ca) {
      // The whole bundle (defaults and additions), as Node trusts it.
      const bundle = join(this.#dir, 'toolgate-ca.pem')
      const text = settings.ca.join('\n')
      // Written when it changes, not on every sync of the interval.
      if (text !== this.#caWritten) {
        writeFileSync(bundle, text, {mode: 0o600})
        this.#caWritten = text
      }
      out.push(['http.sslCAInfo', bundle])
    }
    return out
  }

  #credentials(network: [string, string][]): NodeJS.ProcessEnv {
    const c = this.#config
    const out: NodeJS.ProcessEnv = {}
    // Never follow a redirect: git would re-send the credentials to wherever it points.
    const config: [string, string][] = [['http.followRedirects', 'false'], ...network]
    if (c.tokenFile) {
      const token = readSecretFile(c.tokenFile, {what: `sources (${c.name}).git.tokenFile`})
      const basic = Buffer.from(`${c.username ?? 'x-access-token'}:${token}`).toString('base64')
      // Scoped to the configured URL: sent to that repository only.
      config.push([`http.${c.url}.extraHeader`, `Authorization: Basic ${basic}`])
    }
    config.forEach(([key, value], i) => {
      out[`GIT_CONFIG_KEY_${i}`] = key
      out[`GIT_CONFIG_VALUE_${i}`] = value
    })
    out.GIT_CONFIG_COUNT = String(config.length)
    // ssh never asks anything (BatchMode), and checks the host (StrictHostKeyChecking=yes).
    const key = c.sshKeyFile ? ` -F /dev/null -i ${quote(c.sshKeyFile)} -o IdentitiesOnly=yes` : ''
    const known = c.knownHostsFile ? ` -o UserKnownHostsFile=${quote(c.knownHostsFile)}` : ''
    out.GIT_SSH_COMMAND = `ssh${key} -o BatchMode=yes -o StrictHostKeyChecking=yes${known}`
    return out
  }
}

/** A URL for logs: no userinfo, no query; scp-like `user@host:path` keeps host and path. */
export function describeGitUrl(url: string): string {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return describeUrl(url)
  return url.replace(/^[^@/]*@/, '')
}

// git's own reasons worth a user's eye, before its generic "check your access rights" advice.
const TELLING =
  /Host key verification failed|Permission denied|Authentication failed|Could not resolve|Connection refused|Connection timed out|couldn't find remote ref|not found|does not appear to be a git repository|unable to access/i

/** The line of git's stderr that says what went wrong. */
function reasonOf(text: string): string {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
  const line =
    lines.find((l) => TELLING.test(l)) ?? lines.find((l) => l.startsWith('fatal:')) ?? lines.at(-1)
  // The remote's own words may hold anything: no control characters reach a log or a terminal.
  return (
    (line ?? 'git failed')
      .replace(/^(fatal|error): /, '')
      // eslint-disable-next-line no-control-regex -- control characters are what we replace
      .replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ')
      .slice(0, 300)
  )
}

function redact(text: string, url: string): string {
  // git echoes the URL it was given; ours has no credentials (config refuses them), but a
  // redirect target might.
  return text
    .replace(/[a-z][a-z0-9+.-]*:\/\/[^\s'"]+/gi, (u) => describeUrl(u))
    .replaceAll(url, describeGitUrl(url))
}

/** Single-quoted for the shell that runs GIT_SSH_COMMAND. */
function quote(path: string): string {
  return `'${path.replace(/'/g, `'\\''`)}'`
}
