import {ToolgateError} from '../errors.ts'
import {readSecretFile} from '../fs/secret-file.ts'
import type {Logger} from '../log/logger.ts'
import type {RemoteAuthFlags} from '../oauth/remote-auth-options.ts'

/** The environment variable `proxy` reads a bearer token from, read here the same way. */
const BEARER_TOKEN_ENV = 'TOOLGATE_REMOTE_AUTH_BEARER_TOKEN'

export type RegistryAuthFlags = RemoteAuthFlags & {
  'remote-auth-bearer-token'?: string
  'remote-auth-bearer-token-file'?: string
}

export interface RegistryCredentials {
  /** Undefined for a public registry (no auth flag, no token in the environment). */
  token: (() => Promise<string>) | undefined
  close(): Promise<void>
}

/**
 * The credentials of the registry commands, from the same flags as `proxy`'s outgoing auth: a
 * bearer token (flag, file, or TOOLGATE_REMOTE_AUTH_BEARER_TOKEN), or `--remote-auth` with every
 * login it offers — browser, device code over SSH, client_credentials for CI — and its saved,
 * refreshed logins. A token never appears in a message.
 */
export async function registryCredentials(
  flags: RegistryAuthFlags,
  registryUrl: string,
  deps: {logger: Logger; json: boolean; env?: NodeJS.ProcessEnv; explicit: boolean},
): Promise<RegistryCredentials> {
  const env = deps.env ?? process.env
  const given = flags['remote-auth-bearer-token']
  const file = flags['remote-auth-bearer-token-file']
  if (given !== undefined && file !== undefined)
    throw usage('--remote-auth-bearer-token and --remote-auth-bearer-token-file are alternatives')
  let bearer =
    file !== undefined
      ? readSecretFile(file, {what: '--remote-auth-bearer-token-file'})
      : given?.trim()
  if (given !== undefined && !bearer) throw usage('--remote-auth-bearer-token must not be empty')
  // The environment's token goes only to a registry the user named, never to the default one.
  if (
    bearer === undefined &&
    deps.explicit &&
    !flags['remote-auth'] &&
    env[BEARER_TOKEN_ENV]?.trim()
  )
    bearer = env[BEARER_TOKEN_ENV].trim()
  // eslint-disable-next-line no-control-regex -- control characters are what we refuse
  if (bearer !== undefined && /[\u0000-\u001f\u007f\s]/.test(bearer))
    throw usage('the bearer token contains whitespace or control characters')
  if (bearer !== undefined && flags['remote-auth'])
    throw usage('--remote-auth-bearer-token(-file) and --remote-auth are alternatives; use one')
  if (bearer !== undefined) {
    const fixed = bearer
    return {token: async () => fixed, close: async () => {}}
  }
  const {remoteAuthFromFlags} = await import('../oauth/index.ts')
  const {openSecretStore} = await import('../secrets/index.ts')
  const auth = await remoteAuthFromFlags(flags, registryUrl, {
    logger: deps.logger,
    openStore: () => openSecretStore({logger: deps.logger}),
    write: (text) => process.stderr.write(text),
    json: deps.json,
    isTTY: process.stderr.isTTY === true,
    env,
  })
  if (!auth) return {token: undefined, close: async () => {}}
  try {
    await auth.login()
  } catch (err) {
    await auth.source.close()
    throw err
  }
  return {token: () => auth.source.getToken(), close: () => auth.source.close()}
}

function usage(message: string): ToolgateError {
  return new ToolgateError('ERR_USAGE', message)
}
