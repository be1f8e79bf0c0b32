import {join} from 'node:path'
import {ToolgateError} from '../errors.ts'
import {xdgDirs, type XdgDirs} from '../config/xdg.ts'
import {createLogger, type Logger} from '../log/logger.ts'
import {encryptedProvider} from './encrypted-provider.ts'
import {environmentProvider, readOnlyError} from './environment-provider.ts'
import type {FileLockOptions} from './file-lock.ts'
import type {KdfParams} from './file-format.ts'
import {osKeyring, type KeyringBackend} from './keyring.ts'
import {isReservedName, validateSecretName, validateSecretValue} from './names.ts'
import {resolveSecretsPassword} from './password.ts'
import {readProviderChoice} from './provider-config.ts'
import type {ProviderName, SecretProvider, SecretStore} from './types.ts'

export interface OpenSecretStoreOptions {
  env?: NodeJS.ProcessEnv
  paths?: XdgDirs
  logger?: Logger
  /** Overrides the configured provider. */
  provider?: ProviderName
  /** The OS keyring holding the master password; false disables it (env password only). */
  keyring?: KeyringBackend | false
  /** scrypt parameters for a newly created file (tests use cheap ones). */
  kdf?: KdfParams
  lock?: FileLockOptions
}

export function secretsFile(paths: XdgDirs): string {
  return join(paths.data, 'secrets.enc')
}

/**
 * Opens the configured secrets store. Nothing is decrypted and the keyring is not touched until a
 * value is read or written, so opening is cheap and never prompts.
 *
 * For toolgate's own state (remote OAuth): names from `systemSecretName(...)` with `{system: true}`.
 * The `environment` provider is read-only: `set` throws ERR_SECRET_READ_ONLY, so callers that merely
 * cache state should treat that error as "keep it in memory".
 */
export async function openSecretStore(options: OpenSecretStoreOptions = {}): Promise<SecretStore> {
  const env = options.env ?? process.env
  const paths = options.paths ?? xdgDirs(env)
  const logger = options.logger ?? createLogger({level: 'warn'})
  const providerName = options.provider ?? (await readProviderChoice(paths.config, env))
  const file = providerName === 'encrypted' ? secretsFile(paths) : undefined
  const provider: SecretProvider =
    providerName === 'environment'
      ? environmentProvider(env)
      : encryptedProvider({
          file: file as string,
          kdf: options.kdf,
          lock: options.lock,
          password: async () =>
            (await resolveSecretsPassword({env, keyring: options.keyring ?? osKeyring(), logger}))
              .password,
        })
  return storeOver(provider, file)
}

/** Applies the name rules and the reserved namespace in front of any provider. */
export function storeOver(provider: SecretProvider, file?: string): SecretStore {
  const store: SecretStore = {
    provider: provider.name,
    writable: provider.writable,
    file,
    async get(name, opts = {}) {
      validateSecretName(name, opts)
      return provider.get(name)
    },
    async require(name, opts = {}) {
      const value = await store.get(name, opts)
      if (value === undefined) {
        throw new ToolgateError(
          'ERR_SECRET_NOT_FOUND',
          `secret "${name}" not found in the ${provider.name} secrets store`,
          {
            details: {name},
          },
        )
      }
      return value
    },
    async set(name, value, opts = {}) {
      validateSecretName(name, opts)
      validateSecretValue(value)
      await provider.set(name, value)
    },
    assertWritable(name, opts = {}) {
      validateSecretName(name, opts)
      if (!provider.writable) throw readOnlyError()
    },
    async delete(name, opts = {}) {
      validateSecretName(name, opts)
      return provider.delete(name)
    },
    async list(opts = {}) {
      const names = await provider.list()
      return opts.system ? names : names.filter((n) => !isReservedName(n))
    },
  }
  return store
}
