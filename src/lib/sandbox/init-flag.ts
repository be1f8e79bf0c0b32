/**
 * The hidden first argument that makes the standalone executable run the sandbox init
 * (init-source.ts) instead of the CLI. Its own module so the entry imports nothing else.
 */
export const SANDBOX_INIT_FLAG = '__sandbox-init'
