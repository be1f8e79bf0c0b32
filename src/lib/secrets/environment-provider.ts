import {ToolgateError} from '../errors.ts'
import {ENV_SECRET_PREFIX, environmentVariableFor} from './names.ts'
import type {SecretProvider} from './types.ts'

/**
 * The read-only `environment` provider: secret `name` is the variable `TOOLGATE_SECRET_<NAME>`
 * (names.ts: upper-cased, non-alphanumerics → `_`). For containers and CI systems that already
 * inject secrets as environment variables.
 */
export function readOnlyError(): ToolgateError {
  return new ToolgateError(
    'ERR_SECRET_READ_ONLY',
    `the environment secrets provider is read-only: set ${ENV_SECRET_PREFIX}<NAME> in the environment instead, or run \`toolgate secret setup --provider encrypted\``,
  )
}

export function environmentProvider(env: NodeJS.ProcessEnv): SecretProvider {
  return {
    name: 'environment',
    writable: false,
    async get(name) {
      const v = env[environmentVariableFor(name)]
      return v === undefined || v === '' ? undefined : v
    },
    async list() {
      return (
        Object.keys(env)
          .filter(
            (k) => k.startsWith(ENV_SECRET_PREFIX) && k.length > ENV_SECRET_PREFIX.length && env[k],
          )
          .map((k) => k.slice(ENV_SECRET_PREFIX.length))
          // `TOOLGATE_SECRET__…` could only map to a reserved name; those are never listed.
          .filter((n) => /^[A-Z0-9]/.test(n))
          .sort()
      )
    },
    async set() {
      throw readOnlyError()
    },
    async delete() {
      throw readOnlyError()
    },
  }
}
