import {Writable} from 'node:stream'
import {ToolgateError} from '../errors.ts'
import {SseSplitter, parseSseFields} from '../mcp/sse.ts'
import {forwardRequest, type UpstreamDispatcher} from './forward.ts'
import {endToEndRawHeaders, flatHeaderValues} from './hop-by-hop.ts'

const MAX_ANSWER = 8 * 1024 * 1024

/**
 * Sends one JSON-RPC request to the target on behalf of an interceptor (e.g. authz asking
 * `tools/list` for annotations) and returns the matching JSON-RPC response. Streamable HTTP
 * servers may answer with JSON or with an SSE stream (MCP 2025-06-18 "Sending Messages to the
 * Server"); both are handled. The answer is bounded so a misbehaving target cannot exhaust memory.
 * It goes through the same dispatch path as forwarded requests, so it works on both dispatchers.
 */
export async function callJsonRpc(opts: {
  dispatcher: UpstreamDispatcher
  origin: string
  path: string
  headers: Record<string, string | string[]>
  body: unknown
  signal?: AbortSignal
}): Promise<unknown> {
  const payload = Buffer.from(JSON.stringify(opts.body))
  const chunks: Buffer[] = []
  let size = 0
  let statusCode = 0
  let type = ''
  const call = forwardRequest(
    opts.dispatcher,
    {
      origin: opts.origin,
      path: opts.path,
      method: 'POST',
      headers: {
        ...opts.headers,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        // The answer is parsed here, so it must come uncoded (RFC 9110 §12.5.3).
        'accept-encoding': 'identity',
        'content-length': String(payload.length),
      },
      body: payload,
    },
    (status, rawHeaders) => {
      statusCode = status
      type = flatHeaderValues(endToEndRawHeaders(rawHeaders), 'content-type').join(',')
      const sink = new Writable({
        write(chunk: Buffer, _enc, done) {
          size += chunk.length
          if (size > MAX_ANSWER) {
            done(new ToolgateError('ERR_UPSTREAM', 'upstream answer too large'))
            return
          }
          chunks.push(chunk)
          done()
        },
      })
      // Past the bound: stop the upstream now (a paused exchange would wait for a 'drain' that
      // never comes); the size says why below.
      sink.on('error', (err) => call.cancel(err))
      return sink
    },
  )
  const signal = opts.signal ?? AbortSignal.timeout(30_000)
  const onAbort = () => call.cancel(signal.reason as Error)
  if (signal.aborted) onAbort()
  else signal.addEventListener('abort', onAbort, {once: true})
  try {
    await call.done
  } catch (err) {
    // The sink refused an answer past the bound: that, not the cancelled exchange, is the reason.
    if (size > MAX_ANSWER) throw new ToolgateError('ERR_UPSTREAM', 'upstream answer too large')
    throw err
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
  if (size > MAX_ANSWER) throw new ToolgateError('ERR_UPSTREAM', 'upstream answer too large')
  const text = Buffer.concat(chunks).toString('utf8')
  if (statusCode >= 400)
    throw new ToolgateError('ERR_UPSTREAM', `upstream answered HTTP ${statusCode}`)
  const wantedId = (opts.body as {id?: unknown})?.id
  if (type.startsWith('text/event-stream')) {
    for (const message of sseMessages(text)) {
      const m = message as {id?: unknown; result?: unknown; error?: unknown}
      if (m && m.id === wantedId && ('result' in m || 'error' in m)) return m
    }
    throw new ToolgateError('ERR_UPSTREAM', 'upstream event stream ended without a response')
  }
  try {
    return JSON.parse(text)
  } catch (err) {
    throw new ToolgateError('ERR_UPSTREAM', 'upstream answer is not JSON', {cause: err})
  }
}

/**
 * JSON payloads of the events of an SSE text, with the shared parser (src/lib/mcp/sse.ts, WHATWG
 * HTML §9.2.6): CR, LF and CRLF line ends, comments, `data:` lines joined with LF. An incomplete
 * last event is not dispatched, as clients do not dispatch it either.
 */
function sseMessages(text: string): unknown[] {
  const out: unknown[] = []
  new SseSplitter().push(
    text,
    (_raw, lines) => {
      const {data} = parseSseFields(lines)
      if (data === undefined) return
      try {
        out.push(JSON.parse(data))
      } catch {
        // not JSON: not a JSON-RPC message, skip
      }
    },
    true,
  )
  return out
}
