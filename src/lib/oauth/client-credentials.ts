import {createPrivateKey, type KeyObject} from 'node:crypto'
import {readFileSync} from 'node:fs'
import * as oauth from 'oauth4webapi'
import {ToolgateError} from '../errors.ts'
import type {UpstreamTokenSource} from '../proxy/types.ts'
import {callOptions, type ResolvedServer} from './discovery.ts'
import type {FetchLike} from './oauth-http.ts'
import {toOAuthError} from './oauth-errors.ts'

/** How the client proves itself at the token endpoint (RFC 6749 §2.3.1, RFC 7523 §2.2). */
export type ClientCredential =
  | {kind: 'client_secret_basic'; secret: string}
  | {kind: 'private_key_jwt'; key: CryptoKey; kid?: string}

export interface ClientCredentialsOptions {
  clientId: string
  credential: ClientCredential
  scopes?: string[]
  /** RFC 8707 resource indicator: the audience of the tokens. */
  resource?: string
}

export interface ClientCredentialsDeps {
  /** The authorization server (discovery runs once, on the first token request). */
  server: () => Promise<ResolvedServer>
  /** The fetch for this server's token endpoint (the guarded one when the endpoint was learned). */
  fetch: (server: ResolvedServer) => FetchLike
  now?: () => number
}

/** A token is replaced this long before it expires, so no request goes out with a dying one. */
const EXPIRY_SKEW_MS = 30_000

// Node names curves by their OpenSSL names (prime256v1), JWKs by their JOSE names (P-256).
const ALG_BY_CURVE: Record<string, string> = {
  'P-256': 'ES256',
  prime256v1: 'ES256',
  'P-384': 'ES384',
  secp384r1: 'ES384',
  'P-521': 'ES512',
  secp521r1: 'ES512',
}

/**
 * Reads a private key for `private_key_jwt` (RFC 7523) from a PEM (PKCS#8, PKCS#1 or SEC1) or JWK
 * file and picks the JWS algorithm from the key itself (RSA → RS256, EC → ES256/384/512,
 * Ed25519 → EdDSA). The file's content never appears in an error.
 */
export async function loadClientKey(
  path: string,
  flag = '--remote-auth-client-key-file',
): Promise<{key: CryptoKey; kid?: string}> {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new ToolgateError(
      'ERR_FILE_UNREADABLE',
      `${flag}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    )
  }
  let keyObject: KeyObject
  let kid: string | undefined
  try {
    if (text.trimStart().startsWith('{')) {
      const jwk = JSON.parse(text) as {kid?: unknown; d?: unknown}
      if (typeof jwk.d !== 'string') throw new Error('the JWK holds no private key')
      if (typeof jwk.kid === 'string') kid = jwk.kid
      keyObject = createPrivateKey({key: jwk as never, format: 'jwk'})
    } else {
      keyObject = createPrivateKey(text)
    }
  } catch (err) {
    throw new ToolgateError(
      'ERR_USAGE',
      `${flag}: ${path} is not a private key in PEM or JWK form (${(err as Error).message.split('\n')[0]})`,
    )
  }
  const type = keyObject.asymmetricKeyType
  const alg =
    type === 'rsa'
      ? 'RS256'
      : type === 'ed25519'
        ? 'EdDSA'
        : type === 'ec'
          ? ALG_BY_CURVE[keyObject.asymmetricKeyDetails?.namedCurve ?? '']
          : undefined
  if (!alg) {
    throw new ToolgateError(
      'ERR_USAGE',
      `${flag}: ${path} holds a ${type ?? 'unknown'} key; use RSA, EC (P-256/384/521) or Ed25519`,
    )
  }
  const {importPKCS8} = await import('jose')
  const pkcs8 = keyObject.export({format: 'pem', type: 'pkcs8'}) as string
  const key = (await importPKCS8(pkcs8, alg, {extractable: false})) as CryptoKey
  return kid ? {key, kid} : {key}
}

/**
 * The upstream credential for `--remote-auth-grant client_credentials` (RFC 6749 §4.4): a machine
 * identity, no person, no browser — what CI jobs use. Tokens are cached until shortly before
 * `expires_in`; concurrent callers share one grant request; an upstream 401 triggers one fresh grant.
 */
export class ClientCredentialsTokenSource implements UpstreamTokenSource {
  readonly #options: ClientCredentialsOptions
  readonly #deps: ClientCredentialsDeps
  readonly #now: () => number
  #token: {value: string; expiresAt: number; scope?: string} | undefined
  #pending: Promise<string> | undefined
  /** Grant requests made (tests and debug logs). */
  readonly stats = {grants: 0}

  constructor(options: ClientCredentialsOptions, deps: ClientCredentialsDeps) {
    this.#options = options
    this.#deps = deps
    this.#now = deps.now ?? Date.now
  }

  async getToken(signal?: AbortSignal): Promise<string> {
    const t = this.#token
    if (t && this.#now() < t.expiresAt - EXPIRY_SKEW_MS) return t.value
    this.#pending ??= this.#grant(signal).finally(() => (this.#pending = undefined))
    return this.#pending
  }

  async onUnauthorized(rejected: string, signal?: AbortSignal): Promise<string | undefined> {
    // Another request already replaced the rejected token: use the new one.
    if (this.#token && this.#token.value !== rejected) return this.#token.value
    this.#token = undefined
    try {
      const fresh = await this.getToken(signal)
      return fresh === rejected ? undefined : fresh
    } catch {
      return undefined
    }
  }

  /** Expiry and scope of the current access token (for `toolgate auth token --json`). */
  tokenInfo(): {expiresAt?: number; scope?: string} {
    const t = this.#token
    if (!t) return {}
    return {
      ...(Number.isFinite(t.expiresAt) ? {expiresAt: t.expiresAt} : {}),
      ...(t.scope ? {scope: t.scope} : {}),
    }
  }

  async close(): Promise<void> {
    this.#token = undefined
  }

  async #grant(signal?: AbortSignal): Promise<string> {
    const server = await this.#deps.server()
    const {clientId, credential, scopes, resource} = this.#options
    const client: oauth.Client = {client_id: clientId}
    const auth =
      credential.kind === 'client_secret_basic'
        ? oauth.ClientSecretBasic(credential.secret)
        : oauth.PrivateKeyJwt(
            credential.kid ? {key: credential.key, kid: credential.kid} : {key: credential.key},
          )
    const params: Record<string, string> = {}
    if (scopes?.length) params.scope = scopes.join(' ')
    if (resource) params.resource = resource
    this.stats.grants++
    let tokens: oauth.TokenEndpointResponse
    try {
      const response = await oauth.clientCredentialsGrantRequest(server.as, client, auth, params, {
        ...callOptions(server.as.token_endpoint, this.#deps.fetch(server)),
        ...(signal ? {signal} : {}),
      })
      tokens = await oauth.processClientCredentialsResponse(server.as, client, response)
    } catch (err) {
      // The upstream is unusable without a token: the proxy answers 503 (ERR_NO_UPSTREAM_TOKEN).
      const e = toOAuthError(err, `client credentials grant at ${server.as.issuer}`)
      throw new ToolgateError('ERR_NO_UPSTREAM_TOKEN', e.message, {cause: e})
    }
    const expiresAt =
      typeof tokens.expires_in === 'number' ? this.#now() + tokens.expires_in * 1000 : Infinity
    const scope = typeof tokens.scope === 'string' ? tokens.scope : scopes?.join(' ')
    this.#token = {value: tokens.access_token, expiresAt, ...(scope ? {scope} : {})}
    return tokens.access_token
  }
}
