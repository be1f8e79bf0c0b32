import {ToolgateError} from '../errors.ts'

/**
 * The OS keyring entry that holds the master password of the encrypted store: macOS Keychain,
 * Windows Credential Manager, or the freedesktop Secret Service (GNOME Keyring, KWallet) on Linux.
 *
 * `@napi-rs/keyring` ships prebuilt binaries (no compiler, no libsecret headers), unlike the archived
 * `keytar`. It is imported lazily so a bundled single executable without the native module still runs
 * (it then behaves as "keyring unavailable" and falls back to TOOLGATE_SECRETS_PASSWORD).
 */
export interface KeyringBackend {
  /** Resolves null when no password is stored; rejects with ERR_KEYRING_UNAVAILABLE when unusable. */
  getPassword(): Promise<string | null>
  setPassword(password: string): Promise<void>
  deletePassword(): Promise<boolean>
}

export interface OsKeyringOptions {
  service?: string
  account?: string
  /** Bounds every keyring call (a locked desktop keyring may wait on an unlock prompt). */
  timeoutMs?: number
}

export const KEYRING_SERVICE = 'toolgate'
export const KEYRING_ACCOUNT = 'secrets-password'

interface AsyncEntryLike {
  getPassword(signal?: AbortSignal): Promise<string | null>
  setPassword(password: string, signal?: AbortSignal): Promise<void>
  deletePassword(signal?: AbortSignal): Promise<boolean>
}

type KeyringModule = {
  AsyncEntry: new (
    service: string,
    account: string,
    options?: {linux?: {store?: string}},
  ) => AsyncEntryLike
}

function unavailable(reason: string, cause?: unknown): ToolgateError {
  return new ToolgateError('ERR_KEYRING_UNAVAILABLE', `OS keyring unavailable (${reason})`, {cause})
}

function reasonOf(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err)
  return msg.split('\n')[0]?.slice(0, 300) || 'unknown error'
}

export function osKeyring(options: OsKeyringOptions = {}): KeyringBackend {
  const service = options.service ?? KEYRING_SERVICE
  const account = options.account ?? KEYRING_ACCOUNT
  const timeoutMs = options.timeoutMs ?? 30_000
  let entry: Promise<AsyncEntryLike> | undefined

  const open = (): Promise<AsyncEntryLike> => {
    entry ??= (async () => {
      let mod: KeyringModule
      try {
        mod = (await import('@napi-rs/keyring')) as unknown as KeyringModule
      } catch (err) {
        throw unavailable(`native keyring module not loadable (${reasonOf(err)})`, err)
      }
      try {
        // On Linux pin the Secret Service: the default fallback, the kernel keyring, forgets its
        // contents at logout/reboot, which would strand the encrypted file. Ignored elsewhere.
        return new mod.AsyncEntry(service, account, {linux: {store: 'secret-service'}})
      } catch (err) {
        throw unavailable(reasonOf(err), err)
      }
    })()
    return entry
  }

  const call = async <T>(
    what: string,
    fn: (e: AsyncEntryLike, signal: AbortSignal) => Promise<T>,
  ): Promise<T> => {
    const e = await open()
    const signal = AbortSignal.timeout(timeoutMs)
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(unavailable(`${what} timed out after ${timeoutMs} ms`)),
        timeoutMs,
      )
      timer.unref()
    })
    try {
      return await Promise.race([fn(e, signal), timeout])
    } catch (err) {
      if (err instanceof ToolgateError) throw err
      throw unavailable(reasonOf(err), err)
    } finally {
      clearTimeout(timer)
    }
  }

  return {
    getPassword: () => call('reading the password', (e, s) => e.getPassword(s)),
    setPassword: (password) => call('storing the password', (e, s) => e.setPassword(password, s)),
    deletePassword: () => call('deleting the password', (e, s) => e.deletePassword(s)),
  }
}
