import {ToolgateError, isToolgateError} from '../errors.ts'
import type {Logger} from '../log/logger.ts'
import type {KeyringBackend} from './keyring.ts'

export const PASSWORD_ENV = 'TOOLGATE_SECRETS_PASSWORD'
/** The shortest master password accepted, typed or from the environment. */
export const MIN_PASSWORD_LENGTH = 8

export interface ResolvedPassword {
  password: string
  source: 'keyring' | 'environment'
}

/**
 * Where the master password comes from: the OS keyring first (desktops), then
 * TOOLGATE_SECRETS_PASSWORD (CI, headless servers). A keyring that fails (no session bus, locked,
 * missing native module) is not fatal: we say so on the log and use the environment variable.
 */
export async function resolveSecretsPassword(options: {
  env: NodeJS.ProcessEnv
  keyring: KeyringBackend | false
  logger: Logger
}): Promise<ResolvedPassword> {
  const {env, keyring, logger} = options
  let keyringProblem: string | undefined
  if (keyring) {
    try {
      const stored = await keyring.getPassword()
      if (stored) {
        logger.debug('secrets password from the OS keyring')
        return {password: stored, source: 'keyring'}
      }
      keyringProblem = 'no password stored in the OS keyring'
    } catch (err) {
      if (!isToolgateError(err, 'ERR_KEYRING_UNAVAILABLE')) throw err
      keyringProblem = err.message
    }
  } else {
    keyringProblem = 'OS keyring disabled'
  }
  const fromEnv = env[PASSWORD_ENV]
  if (fromEnv) {
    // The same minimum as the prompt of `secret setup`: a short password is refused wherever it
    // comes from (it only guards the file through scrypt, so its length is its strength).
    if (fromEnv.length < MIN_PASSWORD_LENGTH)
      throw new ToolgateError(
        'ERR_USAGE',
        `${PASSWORD_ENV} must be at least ${MIN_PASSWORD_LENGTH} characters long`,
      )
    // Setting the variable is the operator's answer to a missing keyring (CI, servers): no warning.
    logger.debug(`${keyringProblem}; using ${PASSWORD_ENV}`)
    return {password: fromEnv, source: 'environment'}
  }
  throw new ToolgateError(
    // Nobody can type it here: a missing input (exit 2), named, never a wait.
    'ERR_INPUT_REQUIRED',
    `no secrets password: ${keyringProblem}, and ${PASSWORD_ENV} is not set. Run \`toolgate secret setup\` on a desktop, or set ${PASSWORD_ENV}`,
  )
}
