import {readFile} from 'node:fs/promises'
import {join} from 'node:path'
import {atomicWriteFile} from '../fs/atomic-write.ts'
import {ToolgateError} from '../errors.ts'
import {PROVIDER_NAMES, type ProviderName} from './types.ts'

/**
 * The provider choice made by `secret setup`, kept in `<XDG config>/toolgate/secrets.json` as
 * `{"provider":"encrypted"}`. TOOLGATE_SECRETS_PROVIDER overrides it; the default is `encrypted`.
 */
export const PROVIDER_ENV = 'TOOLGATE_SECRETS_PROVIDER'

export function providerConfigFile(configDir: string): string {
  return join(configDir, 'secrets.json')
}

function checkProvider(value: unknown, where: string): ProviderName {
  if (typeof value === 'string' && (PROVIDER_NAMES as readonly string[]).includes(value))
    return value as ProviderName
  throw new ToolgateError(
    'ERR_CONFIG_INVALID',
    `${where}: ${JSON.stringify(value)} is not a secrets provider (expected ${PROVIDER_NAMES.join(' or ')})`,
  )
}

export async function readProviderChoice(
  configDir: string,
  env: NodeJS.ProcessEnv,
): Promise<ProviderName> {
  const fromEnv = env[PROVIDER_ENV]
  if (fromEnv) return checkProvider(fromEnv, PROVIDER_ENV)
  const file = providerConfigFile(configDir)
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'encrypted'
    throw new ToolgateError(
      'ERR_FILE_UNREADABLE',
      `cannot read ${file}: ${(err as Error).message}`,
      {cause: err},
    )
  }
  let doc: unknown
  try {
    doc = JSON.parse(text)
  } catch (err) {
    throw new ToolgateError(
      'ERR_CONFIG_INVALID',
      `${file}: not valid JSON (${(err as Error).message})`,
      {cause: err},
    )
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new ToolgateError(
      'ERR_CONFIG_INVALID',
      `${file}: expected an object like {"provider":"encrypted"}`,
    )
  }
  for (const key of Object.keys(doc)) {
    if (key !== 'provider')
      throw new ToolgateError('ERR_CONFIG_INVALID', `${file}: ${key}: unknown key`)
  }
  return checkProvider((doc as {provider?: unknown}).provider, `${file}: provider`)
}

export async function writeProviderChoice(
  configDir: string,
  provider: ProviderName,
): Promise<void> {
  await atomicWriteFile(providerConfigFile(configDir), JSON.stringify({provider}) + '\n', {
    mode: 0o600,
    dirMode: 0o700,
  })
}
