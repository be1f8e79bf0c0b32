import {createHash} from 'node:crypto'
import {systemSecretName} from '../secrets/names.ts'

/**
 * Where logins survive restarts: the secrets store's reserved system namespace (contract §7), seen
 * through this small interface so the OAuth code does not depend on how secrets are kept.
 */
export interface TokenStore {
  get(name: string): Promise<string | undefined>
  set(name: string, value: string): Promise<void>
  delete(name: string): Promise<void>
}

/** An in-memory store, for tests and for `--remote-auth` without a usable secrets store. */
export class MemoryTokenStore implements TokenStore {
  readonly entries = new Map<string, string>()
  async get(name: string): Promise<string | undefined> {
    return this.entries.get(name)
  }
  async set(name: string, value: string): Promise<void> {
    this.entries.set(name, value)
  }
  async delete(name: string): Promise<void> {
    this.entries.delete(name)
  }
}

/** Prefix of every name this module stores, inside the secrets store's reserved namespace. */
export const STORE_PREFIX = systemSecretName('oauth') + '/'

export interface StoreNames {
  /** The dynamically registered client (RFC 7591 response fields we need). */
  client: string
  /** The refresh token with the client it belongs to. */
  refresh: string
}

/**
 * Names for one (target, issuer) pair: a login to the same authorization server for another target
 * is a different grant (audience, scopes), so it is kept apart. The names are hashes, so neither
 * URL is readable from a listing.
 */
export function storeNames(targetUri: string, issuer: string): StoreNames {
  const id = createHash('sha256')
    .update(`${new URL(targetUri).href}\n${issuer}`)
    .digest('hex')
    .slice(0, 32)
  return {
    client: systemSecretName('oauth', id, 'client'),
    refresh: systemSecretName('oauth', id, 'refresh'),
  }
}

export interface StoredRefresh {
  refresh_token: string
  client_id: string
  issuer: string
  /** The scopes the login asked for (a refresh can only narrow them, RFC 6749 §6). */
  scopes?: string[]
  /** The RFC 8707 resource the login was for; absent when none was sent. */
  resource?: string
  saved_at: string
}

/**
 * Whether a saved login was made for these scopes and this resource. The names stay keyed by
 * (target, issuer) so one login per target is kept and the documented logout recipe holds; a
 * record saved before scopes and resource were recorded never matches (deny when unsure).
 */
export function sameGrant(
  saved: StoredRefresh,
  scopes: string[],
  resource: string | undefined,
): boolean {
  if (!Array.isArray(saved.scopes) || !saved.scopes.every((s) => typeof s === 'string'))
    return false
  const a = [...new Set(saved.scopes)].sort()
  const b = [...new Set(scopes)].sort()
  return (
    a.length === b.length &&
    a.every((s, i) => s === b[i]) &&
    (saved.resource ?? undefined) === resource
  )
}

/** Why a saved login is not reused, in words for the person running the proxy (stderr). */
export function grantMismatch(
  saved: StoredRefresh,
  scopes: string[],
  resource: string | undefined,
): string {
  if (!Array.isArray(saved.scopes))
    return 'the saved login does not record the scopes and resource it was made for'
  const fmt = (list: string[]) => (list.length > 0 ? `"${list.join(' ')}"` : '(none)')
  const parts: string[] = []
  if (!sameGrant({...saved, resource}, scopes, resource))
    parts.push(`scopes changed from ${fmt(saved.scopes)} to ${fmt(scopes)} (--remote-auth-scopes)`)
  if ((saved.resource ?? undefined) !== resource)
    parts.push(
      `resource changed from ${saved.resource ?? '(none)'} to ${resource ?? '(none)'} (--remote-auth-resource)`,
    )
  return `the saved login was made with other settings: ${parts.join('; ')}`
}

export function parseStoredRefresh(text: string | undefined): StoredRefresh | undefined {
  if (!text) return undefined
  try {
    const v = JSON.parse(text) as Partial<StoredRefresh>
    if (
      typeof v.refresh_token !== 'string' ||
      typeof v.client_id !== 'string' ||
      typeof v.issuer !== 'string'
    )
      return undefined
    return v as StoredRefresh
  } catch {
    return undefined
  }
}
