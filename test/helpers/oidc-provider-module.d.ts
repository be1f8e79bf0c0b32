/**
 * Minimal typing for npm `oidc-provider` (it ships none and @types/oidc-provider is not installed).
 * Only what the test fixture and tests touch; everything else is `any` on purpose.
 */
declare module 'oidc-provider' {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  export type Configuration = Record<string, any>
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  type Any = any
  export default class Provider {
    constructor(issuer: string, configuration?: Configuration)
    readonly issuer: string
    callback(): (
      req: import('node:http').IncomingMessage,
      res: import('node:http').ServerResponse,
    ) => void
    registerGrantType(
      name: string,
      handler: Any,
      params?: string | string[] | Set<string>,
      dupes?: string | string[] | Set<string>,
    ): void
    on(event: string, listener: (...args: Any[]) => void): this
    readonly Client: Any
    readonly Grant: Any
    readonly AccessToken: Any
    readonly ResourceServer: Any;
    [key: string]: Any
  }
}
