import {fetch as undiciFetch} from 'undici'
import {ToolgateError} from '../../errors.ts'
import {describeUrl} from './location.ts'

/** The fetch we call; injectable so tests and the serve command can pass a dispatcher-bound one. */
export type FetchLike = (
  input: string,
  init: {signal: AbortSignal; headers: Record<string, string>},
) => Promise<{
  ok: boolean
  status: number
  headers: {get(name: string): string | null}
  body: AsyncIterable<Uint8Array> | null
}>

export const defaultFetch: FetchLike = (input, init) =>
  undiciFetch(input, init) as ReturnType<FetchLike>

export interface FetchTextOptions {
  fetch?: FetchLike
  timeoutMs: number
  maxBytes: number
  signal?: AbortSignal
}

/**
 * GETs `url` and returns its body as text. Every call has a timeout (the whole exchange, body
 * included) and a size cap; failures are ERR_SOURCE_LOAD naming the URL without its query or
 * credentials.
 */
export async function fetchText(url: string, options: FetchTextOptions): Promise<string> {
  return (await fetchBytes(url, options)).toString('utf8')
}

/** As fetchText, returning the raw body bytes. */
export async function fetchBytes(url: string, options: FetchTextOptions): Promise<Buffer> {
  const where = describeUrl(url)
  const timeout = AbortSignal.timeout(options.timeoutMs)
  const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout
  const doFetch = options.fetch ?? defaultFetch
  try {
    const res = await doFetch(url, {signal, headers: {accept: 'application/json'}})
    if (!res.ok) {
      // Drain nothing: aborting on return frees the connection.
      throw new ToolgateError('ERR_SOURCE_LOAD', `${where}: HTTP ${res.status}`)
    }
    const declared = Number(res.headers.get('content-length'))
    if (Number.isFinite(declared) && declared > options.maxBytes) {
      throw new ToolgateError(
        'ERR_SOURCE_LOAD',
        `${where}: body larger than ${options.maxBytes} bytes`,
      )
    }
    const chunks: Uint8Array[] = []
    let size = 0
    if (res.body) {
      for await (const chunk of res.body) {
        size += chunk.byteLength
        if (size > options.maxBytes) {
          throw new ToolgateError(
            'ERR_SOURCE_LOAD',
            `${where}: body larger than ${options.maxBytes} bytes`,
          )
        }
        chunks.push(chunk)
      }
    }
    return Buffer.concat(chunks, size)
  } catch (err) {
    if (err instanceof ToolgateError) throw err
    if (timeout.aborted) {
      throw new ToolgateError(
        'ERR_SOURCE_LOAD',
        `${where}: timed out after ${options.timeoutMs} ms`,
        {cause: err},
      )
    }
    if (options.signal?.aborted)
      throw new ToolgateError('ERR_SOURCE_LOAD', `${where}: cancelled`, {cause: err})
    const cause = (err as {cause?: {code?: string; message?: string}}).cause
    const why = cause?.code ?? cause?.message ?? (err as Error).message
    throw new ToolgateError('ERR_SOURCE_LOAD', `${where}: request failed (${why})`, {cause: err})
  }
}
