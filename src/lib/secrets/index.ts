// The secrets domain (contract §7): see store.ts for the entry point.
export type {ProviderName, SecretAccessOptions, SecretProvider, SecretStore} from './types.ts'
export {PROVIDER_NAMES} from './types.ts'
export {openSecretStore, secretsFile, storeOver, type OpenSecretStoreOptions} from './store.ts'
export {
  RESERVED_PREFIX,
  environmentVariableFor,
  isReservedName,
  systemSecretName,
  validateSecretName,
} from './names.ts'
export {setupSecrets, type SetupResult} from './setup.ts'
export {osKeyring, type KeyringBackend} from './keyring.ts'
export {PASSWORD_ENV} from './password.ts'
export {PROVIDER_ENV} from './provider-config.ts'
export {
  overrideForwardHeaders,
  parseHeaderSecretSpec,
  resolveForwardHeaderSecrets,
} from './header-secrets.ts'
export {promptHidden, promptNewPassword, readPipedValue} from './input.ts'
