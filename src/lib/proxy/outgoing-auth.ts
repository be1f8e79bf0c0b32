import {ToolgateError} from '../errors.ts'
import type {UpstreamTokenSource} from './types.ts'

/**
 * A fixed bearer token (`--remote-auth-bearer-token`, its file, or the env variable). There is
 * nothing to refresh, so a 401 from the target is passed to the client as it is.
 */
export function staticTokenSource(token: string): UpstreamTokenSource {
  if (!token) throw new ToolgateError('ERR_USAGE', 'the remote bearer token is empty')
  return {
    async getToken() {
      return token
    },
  }
}
