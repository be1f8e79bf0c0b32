/**
 * node:http's values, taken without an ESM import of it.
 *
 * Why: `import … from 'node:http'` builds the module's namespace, which reads every export, and
 * node:http exports `WebSocket`, `CloseEvent` and `MessageEvent` as lazy getters backed by the
 * undici bundled inside Node. That one import made every toolgate process load and compile it:
 * ~12 MB of resident memory on Node 24 for nothing (issue 11's workload budget is 80 MB).
 * `process.getBuiltinModule` returns the module object itself and leaves the getters alone.
 * Types still come from `import type … from 'node:http'`, which is erased.
 */
const http = process.getBuiltinModule('node:http') as typeof import('node:http')

export const {Agent, createServer, request} = http
