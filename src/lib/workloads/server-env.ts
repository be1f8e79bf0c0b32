import {readFile} from 'node:fs/promises'
import {parseEnv} from 'node:util'
import {ToolgateError} from '../errors.ts'
import type {SecretStore} from '../secrets/index.ts'

/**
 * The environment a workload's server starts with: toolgate's own environment without its
 * `TOOLGATE_*` variables (secrets password, bearer tokens: the server has no business with them),
 * then `--env-file`, then `-e KEY=VALUE`, then `--secret NAME,target=ENV` from the secrets store.
 * Later sources win. Values never reach state files or logs — only the names do.
 */

export interface SecretMapping {
  secret: string
  target: string
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

function envName(name: string, where: string): string {
  if (!ENV_NAME.test(name)) {
    throw new ToolgateError(
      'ERR_USAGE',
      `${where}: "${name.slice(0, 60)}" is not an environment variable name (letters, digits, _; not starting with a digit)`,
    )
  }
  return name
}

/** `-e KEY=VALUE`: split at the first '='; the value may be empty, the name may not. */
export function parseEnvAssignment(text: string): [string, string] {
  const eq = text.indexOf('=')
  if (eq <= 0) throw new ToolgateError('ERR_USAGE', `-e: "${text.split('=')[0]}" must be KEY=VALUE`)
  const value = text.slice(eq + 1)
  if (value.includes('\0'))
    throw new ToolgateError('ERR_USAGE', `-e ${text.slice(0, eq)}: NUL byte in value`)
  return [envName(text.slice(0, eq), '-e'), value]
}

/** `--secret NAME,target=ENV`. */
export function parseSecretMapping(text: string): SecretMapping {
  const m = /^([^,]+),target=(.+)$/.exec(text)
  if (!m) {
    throw new ToolgateError(
      'ERR_USAGE',
      `--secret: "${text.slice(0, 80)}" must be <secret-name>,target=<ENV_VARIABLE>`,
    )
  }
  return {secret: m[1]!, target: envName(m[2]!, `--secret ${m[1]}`)}
}

export async function readEnvFile(path: string): Promise<Record<string, string>> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    throw new ToolgateError('ERR_FILE_UNREADABLE', `--env-file ${path}: ${(err as Error).message}`)
  }
  const values = parseEnv(text) as Record<string, string>
  for (const name of Object.keys(values)) envName(name, `--env-file ${path}`)
  return values
}

export interface ServerEnvInput {
  base: NodeJS.ProcessEnv
  envFile?: string | undefined
  assignments: string[]
  secrets: SecretMapping[]
  openStore: () => Promise<SecretStore>
}

export async function buildServerEnv(input: ServerEnvInput): Promise<NodeJS.ProcessEnv> {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(input.base)) if (!k.startsWith('TOOLGATE_')) env[k] = v
  if (input.envFile) Object.assign(env, await readEnvFile(input.envFile))
  for (const text of input.assignments) {
    const [k, v] = parseEnvAssignment(text)
    env[k] = v
  }
  if (input.secrets.length > 0) {
    const store = await input.openStore()
    for (const {secret, target} of input.secrets) env[target] = await store.require(secret)
  }
  return env
}
