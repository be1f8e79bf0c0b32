import {isToolgateError} from '../errors.ts'
import type {Logger} from '../log/logger.ts'
import type {SecretStore} from '../secrets/types.ts'
import {MemoryTokenStore, type TokenStore} from './token-store.ts'

/**
 * The remote login's state in the secrets store (contract §7), under reserved names hidden from
 * `toolgate secret list`. When the store cannot keep it (the read-only `environment` provider, no
 * keyring and no TOOLGATE_SECRETS_PASSWORD, a locked file) the login still works for this run: it
 * is kept in memory and one warning says it will not survive a restart.
 */
export function secretTokenStore(store: SecretStore, logger?: Logger): TokenStore {
  const memory = new MemoryTokenStore()
  let degraded = false
  const degrade = (err: unknown) => {
    if (!isToolgateError(err)) throw err
    if (!degraded) {
      degraded = true
      logger?.warn('the remote login is kept in memory only and will not survive a restart', {
        reason: err.message,
        code: err.code,
      })
    }
  }
  return {
    async get(name) {
      if (!degraded) {
        try {
          return (await store.get(name, {system: true})) ?? memory.get(name)
        } catch (err) {
          degrade(err)
        }
      }
      return memory.get(name)
    },
    async set(name, value) {
      await memory.set(name, value)
      if (degraded) return
      try {
        await store.set(name, value, {system: true})
      } catch (err) {
        degrade(err)
      }
    },
    async delete(name) {
      await memory.delete(name)
      if (degraded) return
      try {
        await store.delete(name, {system: true})
      } catch (err) {
        degrade(err)
      }
    },
  }
}
