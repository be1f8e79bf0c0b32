/**
 * Inputs of `toolgate authz check`: the caller (a claims file, or a token validated by the
 * server's own validator), the JSON-RPC params, a list response from a file, and — with
 * `--target-uri` — the MCP server itself, asked with the real MCP client for its tool annotations
 * and lists, as the proxy asks it. Every error names the input and never quotes a token.
 */
import {readFile} from 'node:fs/promises'
import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {
  providersFromOidcFlags,
  providersFromServeConfig,
  readToken,
} from '../auth/explain/source.ts'
import {createAuthenticator} from '../auth/index.ts'
import type {IncomingOidcOptions} from '../proxy/incoming-auth.ts'
import type {OAuthConfig} from '../auth/types.ts'
import {ToolgateError} from '../errors.ts'
import type {Logger} from '../log/logger.ts'
import {isRecord} from '../mcp/json-rpc.ts'
import {AnnotationCache} from './annotation-cache.ts'
import type {ToolAnnotations} from './entity-model.ts'
import type {ListKind} from './method-table.ts'

export interface Caller {
  subject: string
  claims: Record<string, unknown>
}

async function readJsonFile(path: string, what: string): Promise<unknown> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    throw new ToolgateError(
      'ERR_USAGE',
      `${what} ${path}: ${code === 'ENOENT' ? 'no such file' : 'cannot be read'}`,
      {cause: err},
    )
  }
  try {
    return JSON.parse(text)
  } catch (err) {
    throw new ToolgateError('ERR_USAGE', `${what} ${path}: not JSON: ${(err as Error).message}`)
  }
}

/** `--claims claims.json`: the token's claims as an object; `sub` names the Client. */
export async function loadClaims(
  path: string,
  options: {requireSub?: boolean} = {},
): Promise<Caller> {
  const value = await readJsonFile(path, '--claims')
  if (!isRecord(value))
    throw new ToolgateError('ERR_USAGE', `--claims ${path}: must be a JSON object of claims`)
  if (options.requireSub === false) return {subject: String(value.sub ?? ''), claims: value}
  if (typeof value.sub !== 'string' || value.sub === '')
    throw new ToolgateError(
      'ERR_USAGE',
      `--claims ${path}: sub must be a non-empty string (it names the Client)`,
    )
  return {subject: value.sub, claims: value}
}

/** `--token`: validated exactly as the proxy validates it; a refused token names its reason code. */
export async function callerFromToken(
  token: string,
  oauth: OAuthConfig,
  configPath: string,
  logger: Logger,
): Promise<Caller> {
  const auth = createAuthenticator(oauth, {logger, configPath, cacheMaxEntries: 0})
  try {
    const outcome = await auth.authenticate(`Bearer ${token}`)
    if (!outcome.ok)
      throw new ToolgateError(
        'ERR_AUTH_INVALID_TOKEN',
        `--token: refused before authorization (reason: ${outcome.reason ?? outcome.error}); run toolgate auth explain for the details`,
      )
    return {subject: outcome.principal.subject, claims: outcome.principal.claims}
  } finally {
    await auth.close()
  }
}

export function parseJsonFlag(text: string, flag: string): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw new ToolgateError('ERR_USAGE', `${flag}: not JSON: ${(err as Error).message}`)
  }
  if (!isRecord(value)) throw new ToolgateError('ERR_USAGE', `${flag}: must be a JSON object`)
  return value
}

export const readListResponse = (path: string) => readJsonFile(path, '--list-response')

const MAX_PAGES = 50

/**
 * The MCP server behind the proxy, reached with the SDK client over streamable HTTP. Annotations
 * go through the proxy's own AnnotationCache (same paging, same "unknown tool → none" rule).
 */
export async function connectTarget(url: string, timeoutMs = 15_000) {
  let target: URL
  try {
    target = new URL(url)
  } catch {
    throw new ToolgateError('ERR_USAGE', `--target-uri: "${url}" is not a URL`)
  }
  const client = new Client({name: 'toolgate-authz-check', version: '1'})
  try {
    await client.connect(new StreamableHTTPClientTransport(target), {timeout: timeoutMs})
  } catch (err) {
    throw new ToolgateError(
      'ERR_UPSTREAM',
      `--target-uri ${target.origin}: cannot connect: ${(err as Error).message}`,
      {cause: err},
    )
  }
  const page = async (kind: ListKind, cursor: string | undefined) => {
    const params = cursor === undefined ? {} : {cursor}
    const options = {timeout: timeoutMs}
    const result =
      kind === 'tools'
        ? await client.listTools(params, options)
        : kind === 'prompts'
          ? await client.listPrompts(params, options)
          : await client.listResources(params, options)
    return result as Record<string, unknown>
  }
  const cache = new AnnotationCache()
  return {
    annotations(tool: string): Promise<ToolAnnotations | undefined> {
      return cache.get(tool, async (cursor) => ({result: await page('tools', cursor)}))
    },
    async list(kind: ListKind): Promise<unknown> {
      const items: unknown[] = []
      let cursor: string | undefined
      for (let i = 0; i < MAX_PAGES; i++) {
        const result = await page(kind, cursor)
        if (Array.isArray(result[kind])) items.push(...(result[kind] as unknown[]))
        cursor =
          typeof result.nextCursor === 'string' && result.nextCursor !== ''
            ? result.nextCursor
            : undefined
        if (!cursor) break
      }
      return {[kind]: items}
    },
    close: () => client.close(),
  }
}

/**
 * The caller of `authz check`: `--claims`, or `--token` validated by the providers of `--config`
 * (a serve config) or of the `--oidc-*` flags.
 */
export async function resolveCaller(
  opts: {
    claims?: string | undefined
    token?: string | undefined
    config?: string | undefined
    oidc: IncomingOidcOptions
  },
  logger: Logger,
): Promise<Caller> {
  if (opts.claims !== undefined) return loadClaims(opts.claims)
  const source = opts.config
    ? providersFromServeConfig(opts.config)
    : providersFromOidcFlags(opts.oidc)
  const token = await readToken({token: opts.token, stdin: async () => '', stdinIsTty: true})
  return callerFromToken(token, source.oauth, source.configPath, logger)
}

/** The `--oidc-*` flags of `authz check` as the proxy's incoming-auth options. */
export function oidcOptionsOf(flags: {
  'oidc-issuer'?: string | undefined
  'oidc-audience'?: string | undefined
  'oidc-client-id'?: string | undefined
  'oidc-client-secret'?: string | undefined
  'oidc-introspection-url'?: string | undefined
  'oidc-jwks-url'?: string | undefined
}): IncomingOidcOptions {
  return {
    issuer: flags['oidc-issuer'],
    audience: flags['oidc-audience'],
    clientId: flags['oidc-client-id'],
    clientSecret: flags['oidc-client-secret'],
    introspectionUrl: flags['oidc-introspection-url'],
    jwksUrl: flags['oidc-jwks-url'],
    scopes: [],
  }
}
