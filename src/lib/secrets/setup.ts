import {ToolgateError, isToolgateError} from '../errors.ts'
import {xdgDirs, type XdgDirs} from '../config/xdg.ts'
import type {Logger} from '../log/logger.ts'
import {verifyOrCreateEncryptedFile} from './encrypted-provider.ts'
import type {FileLockOptions} from './file-lock.ts'
import type {KdfParams} from './file-format.ts'
import {osKeyring, type KeyringBackend} from './keyring.ts'
import {MIN_PASSWORD_LENGTH, PASSWORD_ENV} from './password.ts'
import {providerConfigFile, writeProviderChoice} from './provider-config.ts'
import {secretsFile} from './store.ts'
import type {ProviderName} from './types.ts'

export {MIN_PASSWORD_LENGTH}

export interface SetupOptions {
  provider: ProviderName
  env?: NodeJS.ProcessEnv
  paths?: XdgDirs
  logger: Logger
  keyring?: KeyringBackend | false
  /** Asks the user (hidden TTY input); undefined when there is no TTY. */
  promptPassword?: () => Promise<string>
  kdf?: KdfParams
  lock?: FileLockOptions
}

export interface SetupResult {
  provider: ProviderName
  configFile: string
  file?: string
  /** `created` a new empty store, or `verified` the password against an existing one. */
  store?: 'created' | 'verified'
  passwordSource?: 'environment' | 'prompt' | 'keyring'
  /** Whether the password is now in the OS keyring (false: TOOLGATE_SECRETS_PASSWORD is needed). */
  keyring?: boolean
  keyringProblem?: string
}

/**
 * `secret setup`: records the provider; for `encrypted`, takes the master password (from
 * TOOLGATE_SECRETS_PASSWORD, else the keyring if it already holds one, else a TTY prompt), checks it
 * against an existing file or creates an empty one, and stores it in the OS keyring when possible.
 */
export async function setupSecrets(options: SetupOptions): Promise<SetupResult> {
  const env = options.env ?? process.env
  const paths = options.paths ?? xdgDirs(env)
  const {logger} = options
  const configFile = providerConfigFile(paths.config)
  if (options.provider === 'environment') {
    await writeProviderChoice(paths.config, 'environment')
    return {provider: 'environment', configFile}
  }

  const keyring = options.keyring ?? osKeyring()
  let keyringProblem: string | undefined
  let inKeyring: string | null = null
  if (keyring) {
    try {
      inKeyring = await keyring.getPassword()
    } catch (err) {
      if (!isToolgateError(err, 'ERR_KEYRING_UNAVAILABLE')) throw err
      keyringProblem = err.message
    }
  } else {
    keyringProblem = 'OS keyring disabled'
  }

  let password: string
  let source: SetupResult['passwordSource']
  if (env[PASSWORD_ENV]) {
    password = env[PASSWORD_ENV]
    source = 'environment'
  } else if (inKeyring) {
    password = inKeyring
    source = 'keyring'
  } else if (options.promptPassword) {
    password = await options.promptPassword()
    source = 'prompt'
  } else {
    throw new ToolgateError(
      // Nobody can type it here: a missing input (exit 2), named, never a wait.
      'ERR_INPUT_REQUIRED',
      `no master password: set ${PASSWORD_ENV}, or run \`toolgate secret setup\` in a terminal to type one`,
    )
  }
  if (password.length < MIN_PASSWORD_LENGTH) {
    throw new ToolgateError(
      'ERR_USAGE',
      source === 'environment'
        ? `${PASSWORD_ENV} must be at least ${MIN_PASSWORD_LENGTH} characters long`
        : `the master password must be at least ${MIN_PASSWORD_LENGTH} characters long`,
    )
  }

  const file = secretsFile(paths)
  const outcome = await verifyOrCreateEncryptedFile(file, password, {
    kdf: options.kdf,
    lock: options.lock,
  })

  let stored = source === 'keyring'
  if (keyring && !stored && !keyringProblem) {
    try {
      await keyring.setPassword(password)
      stored = true
    } catch (err) {
      if (!isToolgateError(err, 'ERR_KEYRING_UNAVAILABLE')) throw err
      keyringProblem = err.message
    }
  }
  if (!stored && source === 'environment') {
    // The operator already supplies the password through the environment: nothing to warn about.
    logger.debug(`${keyringProblem}; the master password stays in ${PASSWORD_ENV}`)
  } else if (!stored) {
    logger.warn(
      `${keyringProblem}; the master password was not saved, so set ${PASSWORD_ENV} whenever toolgate reads secrets`,
    )
  }
  await writeProviderChoice(paths.config, 'encrypted')
  return {
    provider: 'encrypted',
    configFile,
    file,
    store: outcome,
    passwordSource: source,
    keyring: stored,
    keyringProblem,
  }
}
