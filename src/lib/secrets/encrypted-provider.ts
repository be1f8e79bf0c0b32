import {readFile} from 'node:fs/promises'
import {atomicWriteFile} from '../fs/atomic-write.ts'
import {ToolgateError} from '../errors.ts'
import {withFileLock, type FileLockOptions} from './file-lock.ts'
import {
  DEFAULT_KDF,
  decryptFile,
  deriveKeys,
  encryptFile,
  newSalt,
  parseFile,
  type DerivedKeys,
  type KdfParams,
  type SecretMap,
} from './file-format.ts'
import type {SecretProvider} from './types.ts'

const RETRY = Symbol('retry')
const cacheId = (salt: Buffer, kdf: KdfParams) =>
  `${salt.toString('hex')}:${kdf.log2N}:${kdf.r}:${kdf.p}`

export interface EncryptedProviderOptions {
  /** The secrets file, `<XDG data>/toolgate/secrets.enc` by default (see paths.ts). */
  file: string
  /** Called at most once, and only when the file must be decrypted or created. */
  password: () => Promise<string>
  /** Parameters for a newly created file; existing files keep the ones in their header. */
  kdf?: KdfParams
  lock?: FileLockOptions
}

/**
 * The `encrypted` provider: one AES-256-GCM file (file-format.ts). Reads need no lock because
 * writes replace the file atomically; every write is a locked read-modify-write so concurrent
 * writers never lose an update. A damaged file or a wrong password throws before anything is
 * written, so the file is never overwritten by a failed open.
 */
export function encryptedProvider(options: EncryptedProviderOptions): SecretProvider {
  const {file} = options
  const kdfForNew = options.kdf ?? DEFAULT_KDF
  let password: Promise<string> | undefined
  // Derived keys by salt+params: the salt only changes when the file is recreated.
  const keyCache = new Map<string, Promise<DerivedKeys>>()

  const keysFor = (salt: Buffer, kdf: KdfParams): Promise<DerivedKeys> => {
    const id = cacheId(salt, kdf)
    let keys = keyCache.get(id)
    if (!keys) {
      password ??= options.password()
      keys = password.then((pw) => deriveKeys(pw, salt, kdf))
      keys.catch(() => keyCache.delete(id))
      keyCache.set(id, keys)
    }
    return keys
  }

  const readRaw = async (): Promise<Buffer | undefined> => {
    try {
      return await readFile(file)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw new ToolgateError(
        'ERR_FILE_UNREADABLE',
        `cannot read secrets file ${file}: ${(err as Error).message}`,
        {cause: err},
      )
    }
  }

  const load = async (
    preread?: Buffer,
  ): Promise<{secrets: SecretMap; salt: Buffer; kdf: KdfParams; keys: DerivedKeys} | undefined> => {
    const raw = preread ?? (await readRaw())
    if (!raw) return undefined
    const parsed = parseFile(raw, file)
    const keys = await keysFor(parsed.salt, parsed.kdf)
    return {secrets: decryptFile(parsed, keys, file), salt: parsed.salt, kdf: parsed.kdf, keys}
  }

  /**
   * Everything slow happens before the lock: the password (a keyring may show an unlock prompt) and
   * the scrypt derivation for the current salt (cached). The locked section is then only
   * read + decrypt + encrypt + write, far below the stale-lock age, and writers derive in parallel.
   */
  const prepare = async (): Promise<void> => {
    const raw = await readRaw().catch(() => undefined)
    if (!raw) {
      password ??= options.password()
      await password
      return
    }
    try {
      const parsed = parseFile(raw, file)
      await keysFor(parsed.salt, parsed.kdf)
    } catch {
      // A damaged file is reported from inside the lock, where the decision to write is made.
    }
  }

  const modify = async (change: (secrets: SecretMap) => boolean): Promise<boolean> => {
    // At most two rounds: a retry only happens when another writer created the file (new salt)
    // between prepare() and the lock, and the salt of an existing file never changes.
    for (let round = 0; ; round++) {
      await prepare()
      const outcome = await withFileLock(
        `${file}.lock`,
        async (): Promise<boolean | typeof RETRY> => {
          const raw = await readRaw()
          if (raw) {
            const parsed = parseFile(raw, file)
            if (round === 0 && !keyCache.has(cacheId(parsed.salt, parsed.kdf))) return RETRY
          }
          let current = await load(raw)
          if (!current) {
            const salt = newSalt()
            current = {
              secrets: Object.create(null) as SecretMap,
              salt,
              kdf: kdfForNew,
              keys: await keysFor(salt, kdfForNew),
            }
          }
          if (!change(current.secrets)) return false
          await atomicWriteFile(
            file,
            encryptFile(current.secrets, current.keys, current.salt, current.kdf),
            {mode: 0o600, dirMode: 0o700},
          )
          return true
        },
        options.lock,
      )
      if (outcome !== RETRY) return outcome
    }
  }

  return {
    name: 'encrypted',
    writable: true,
    async get(name) {
      const current = await load()
      return current && Object.hasOwn(current.secrets, name) ? current.secrets[name] : undefined
    },
    async list() {
      const current = await load()
      return current ? Object.keys(current.secrets).sort() : []
    },
    async set(name, value) {
      await modify((s) => {
        s[name] = value
        return true
      })
    },
    delete(name) {
      return modify((s) => {
        if (!Object.hasOwn(s, name)) return false
        delete s[name]
        return true
      })
    },
  }
}

/**
 * Opens (or, when absent, creates an empty) store with the given password: used by `secret setup`
 * to check a password before it goes into the keyring. Throws ERR_SECRET_LOCKED on a wrong password.
 */
export async function verifyOrCreateEncryptedFile(
  file: string,
  password: string,
  options: {kdf?: KdfParams; lock?: FileLockOptions} = {},
): Promise<'verified' | 'created'> {
  let created = false
  await withFileLock(
    `${file}.lock`,
    async () => {
      let raw: Buffer | undefined
      try {
        raw = await readFile(file)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
      }
      if (raw) {
        const parsed = parseFile(raw, file)
        decryptFile(parsed, await deriveKeys(password, parsed.salt, parsed.kdf), file)
        return
      }
      const salt = newSalt()
      const kdf = options.kdf ?? DEFAULT_KDF
      await atomicWriteFile(
        file,
        encryptFile({}, await deriveKeys(password, salt, kdf), salt, kdf),
        {mode: 0o600, dirMode: 0o700},
      )
      created = true
    },
    options.lock,
  )
  return created ? 'created' : 'verified'
}
