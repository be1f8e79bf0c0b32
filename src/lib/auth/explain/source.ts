/**
 * Where `auth explain` gets its providers and its token. Providers come from exactly what the
 * server reads — `serve --config` (loadServeConfig) or the `--oidc-*` flags of `proxy`/`run`
 * (oauthConfigFromOidc) — so the explanation judges with the server's own configuration.
 */
import {readFile} from 'node:fs/promises'
import {loadServeConfig} from '../../config/serve-config.ts'
import {ToolgateError} from '../../errors.ts'
import {
  incomingAuthEnabled,
  oauthConfigFromOidc,
  type IncomingOidcOptions,
} from '../../proxy/incoming-auth.ts'
import type {OAuthConfig} from '../types.ts'

export interface ProviderSource {
  oauth: OAuthConfig
  configPath: string
}

export function providersFromServeConfig(file: string): ProviderSource {
  // defaultDbPath only names a cache file; explain never opens storage.
  const config = loadServeConfig(file, {defaultDbPath: ''})
  if (config.auth.mode !== 'oauth')
    throw new ToolgateError(
      'ERR_CONFIG_INVALID',
      `config file ${file}: auth.mode is anonymous, so serve checks no token at all`,
    )
  return {oauth: config.auth.oauth, configPath: 'auth.oauth.providers'}
}

export function providersFromOidcFlags(oidc: IncomingOidcOptions): ProviderSource {
  if (!incomingAuthEnabled(oidc))
    throw new ToolgateError(
      'ERR_USAGE',
      'no providers: pass --config <serve.yaml>, or --oidc-issuer / --oidc-jwks-url / --oidc-introspection-url as given to proxy or run',
    )
  return {oauth: oauthConfigFromOidc(oidc, undefined), configPath: '--oidc-* flags'}
}

/**
 * The token from `--token`, `--token-file` or stdin. Surrounding white space and a pasted
 * `Bearer ` prefix are removed; what is left is judged exactly as the server would judge it.
 * Errors name the source, never the content.
 */
export async function readToken(opts: {
  token?: string | undefined
  tokenFile?: string | undefined
  stdin: () => Promise<string>
  stdinIsTty: boolean
}): Promise<string> {
  if (opts.token !== undefined && opts.tokenFile !== undefined)
    throw new ToolgateError('ERR_USAGE', 'give the token once: --token or --token-file, not both')
  let text: string
  let where: string
  if (opts.token !== undefined) {
    text = opts.token
    where = '--token'
  } else if (opts.tokenFile !== undefined) {
    where = `--token-file ${opts.tokenFile}`
    try {
      text = await readFile(opts.tokenFile, 'utf8')
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      throw new ToolgateError(
        'ERR_USAGE',
        `${where}: ${code === 'ENOENT' ? 'no such file' : 'cannot be read'}`,
        {cause: err},
      )
    }
  } else {
    if (opts.stdinIsTty)
      throw new ToolgateError(
        'ERR_USAGE',
        'no token: pass --token, --token-file, or pipe it on stdin',
      )
    where = 'stdin'
    text = await opts.stdin()
  }
  let token = text.trim()
  if (token.startsWith('Bearer ')) token = token.slice(7).trim()
  if (token === '') throw new ToolgateError('ERR_USAGE', `${where}: the token is empty`)
  if (/\s/.test(token))
    throw new ToolgateError('ERR_USAGE', `${where}: holds more than one word; give one token`)
  return token
}

/** Reads a token piped on stdin, at most `maxBytes` (a token is small; a runaway pipe is not). */
export async function readBounded(
  stream: NodeJS.ReadableStream,
  maxBytes = 64 * 1024,
): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of stream) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string)
    size += b.length
    if (size > maxBytes)
      throw new ToolgateError(
        'ERR_USAGE',
        `stdin: more than ${maxBytes} bytes; a token is far smaller`,
      )
    chunks.push(b)
  }
  return Buffer.concat(chunks).toString('utf8')
}
