/**
 * Entry point for commands: `--authz-config <path>` → a RequestInterceptor for the proxy pipeline.
 */
import {AuthzInterceptor, type AuthzInterceptorOptions} from './interceptor.ts'
import {loadAuthzConfigFile} from './policy-file.ts'

export {AuthzInterceptor, forbiddenAnswer} from './interceptor.ts'
export {Authorizer, type Decision} from './authorizer.ts'
export {
  loadAuthzConfigFile,
  parseAuthzConfigText,
  validateAuthzConfig,
  type AuthzConfig,
} from './policy-file.ts'

/** Loads and validates the policy file (throws ERR_POLICY_INVALID naming the field) and builds the interceptor. */
export async function loadAuthzInterceptor(
  path: string,
  options: AuthzInterceptorOptions = {},
): Promise<AuthzInterceptor> {
  const config = await loadAuthzConfigFile(path)
  const interceptor = new AuthzInterceptor(config, options)
  options.logger?.info('authorization policy loaded', {
    file: path,
    policies: Object.keys(config.policies).length,
    entities: config.entities.length,
  })
  return interceptor
}
