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
  const id = createHash('sha256').update(`${new URL(targetUri).href}\n${issuer}`).digest('hex').slice(0, 32)
  return {client: systemSecretName('oauth', id, 'client'), refresh: systemSecretName('oauth', id, 'refresh')}
}

export interface StoredRefresh {
  refresh_token: string
  client_id: string
  issuer: string
  saved_at: string
}

export function parseStoredRefresh(text: string | undefined): StoredRefresh | undefined {
  if (!text) return undefined
  try {
    const v = JSON.parse(text) as Partial<StoredRefresh>
    if (typeof v.refresh_token !== 'string' || typeof v.client_id !== 'string' || typeof v.issuer !== 'string') return undefined
    return v as StoredRefresh
  } catch {
    return undefined
  }
}
