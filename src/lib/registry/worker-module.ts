import {ToolgateError} from '../errors.ts'

/**
 * What the registry's worker threads (the file scan, the PostgreSQL staging) share: whether a
 * worker can import our modules, and how an error it posts back is thrown again here.
 */

/**
 * Whether our modules are files a worker can import: from source (.ts) and from dist (.js), not
 * in the standalone executable, whose one bundled script has no module to import.
 */
export const workersCanImport = /\.(ts|js)$/.test(import.meta.url)

/** An error as a worker posts it: its message, its code, and whether it was a ToolgateError. */
export interface PostedError {
  message: string
  code?: string
  toolgate?: boolean
}

/**
 * The posted error thrown as the same pass on the event loop would have thrown it: a ToolgateError
 * keeps its code; an errno error (ENOENT: the file went away since the scan) keeps its code for
 * the loader's "cannot read (<code>)"; anything else is a plain Error the caller reports.
 */
export function postedError({message, code, toolgate}: PostedError): Error {
  if (toolgate) return new ToolgateError(code as 'ERR_SOURCE_LOAD', message)
  return code !== undefined ? Object.assign(new Error(message), {code}) : new Error(message)
}
