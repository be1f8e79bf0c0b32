/**
 * The secrets domain (contract §7). A provider stores name → value pairs; the store in front of it
 * enforces name rules and the reserved system namespace.
 */
export type ProviderName = 'encrypted' | 'environment'

export const PROVIDER_NAMES: readonly ProviderName[] = ['encrypted', 'environment']

/** A storage backend. Names reaching a provider have already been validated by the store. */
export interface SecretProvider {
  readonly name: ProviderName
  readonly writable: boolean
  get(name: string): Promise<string | undefined>
  /** Every stored name, reserved ones included, sorted. */
  list(): Promise<string[]>
  set(name: string, value: string): Promise<void>
  /** Resolves false when there was nothing to delete. */
  delete(name: string): Promise<boolean>
}

/**
 * `system: true` lets a caller touch names in the reserved namespace (see names.ts); only toolgate's
 * own state (OAuth refresh tokens, dynamic client registrations) and `--system` use it.
 */
export interface SecretAccessOptions {
  system?: boolean
}

export interface SecretStore {
  readonly provider: ProviderName
  readonly writable: boolean
  /** The encrypted file, when the provider has one. */
  readonly file: string | undefined
  get(name: string, options?: SecretAccessOptions): Promise<string | undefined>
  /** Like get, but a missing secret is ERR_SECRET_NOT_FOUND naming it. */
  require(name: string, options?: SecretAccessOptions): Promise<string>
  set(name: string, value: string, options?: SecretAccessOptions): Promise<void>
  /** Throws what `set` would for this name before any value exists (bad name, read-only provider). */
  assertWritable(name: string, options?: SecretAccessOptions): void
  delete(name: string, options?: SecretAccessOptions): Promise<boolean>
  /** User names only; with `system: true`, every name including the reserved ones. */
  list(options?: SecretAccessOptions): Promise<string[]>
}
