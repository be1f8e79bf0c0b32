import {timingSafeEqual} from 'node:crypto'
import type {IncomingMessage, ServerResponse} from 'node:http'
import {createServer} from '../http/node-http.ts'
import {ToolgateError} from '../errors.ts'
import {listen} from '../http/listen.ts'

/**
 * The loopback redirect target of the login (RFC 8252 §7.3): 127.0.0.1 only, path `/callback`.
 * A callback whose `state` is not ours is answered 400 and otherwise ignored, so a forged or stale
 * redirect can neither complete nor abort the login (RFC 6749 §10.12). The browser's request is
 * held open until the caller reports the outcome, so the page tells the truth about the login.
 */
export interface CallbackResult {
  params: URLSearchParams
  /** Answers the waiting browser with the final outcome. */
  finish(ok: boolean, message: string): void
}

export interface CallbackServer {
  port: number
  redirectUri: string
  /** Resolves with the first callback carrying `expectedState`. */
  wait(expectedState: string, signal: AbortSignal): Promise<CallbackResult>
  close(): Promise<void>
}

export interface CallbackServerOptions {
  port: number
  /** Told about each rejected callback (wrong or missing state); never given the parameters. */
  onRejected?: (reason: string) => void
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

function page(res: ServerResponse, status: number, title: string, message: string): void {
  const body = `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body style="font-family:sans-serif;margin:3em"><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p></body></html>`
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
    'x-content-type-options': 'nosniff',
  })
  res.end(body)
}

function sameState(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

export async function startCallbackServer(options: CallbackServerOptions): Promise<CallbackServer> {
  let waiter: {state: string; resolve: (r: CallbackResult) => void} | undefined
  let pending: ServerResponse | undefined

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1')
    if (req.method !== 'GET' || url.pathname !== '/callback') {
      page(res, 404, 'Not found', 'This is the toolgate login callback; nothing else lives here.')
      return
    }
    const state = url.searchParams.get('state')
    if (!waiter || state === null || !sameState(state, waiter.state)) {
      options.onRejected?.(
        state === null
          ? 'callback without state'
          : 'callback with a state that does not match this login',
      )
      page(
        res,
        400,
        'Login rejected',
        'This callback does not belong to the login in progress (state mismatch). Start the login again from the terminal.',
      )
      return
    }
    const w = waiter
    waiter = undefined
    pending = res
    let done = false
    w.resolve({
      params: url.searchParams,
      finish(ok, message) {
        if (done) return
        done = true
        pending = undefined
        page(res, ok ? 200 : 400, ok ? 'Login complete' : 'Login failed', message)
      },
    })
  })
  server.keepAliveTimeout = 1000

  const info = await listen(
    server,
    {host: '127.0.0.1', port: options.port},
    '--remote-auth-callback-port',
  ).catch((err: unknown) => {
    if (err instanceof ToolgateError && err.code === 'ERR_ADDRESS_IN_USE') {
      throw new ToolgateError(
        'ERR_ADDRESS_IN_USE',
        `the login callback port 127.0.0.1:${options.port} is already in use (another login or program holds it); free it or choose another with --remote-auth-callback-port`,
        {cause: err},
      )
    }
    throw err
  })

  return {
    port: info.port,
    redirectUri: `http://127.0.0.1:${info.port}/callback`,
    wait(expectedState, signal) {
      return new Promise<CallbackResult>((resolve, reject) => {
        if (signal.aborted) return reject(signal.reason)
        const onAbort = () => {
          waiter = undefined
          reject(signal.reason)
        }
        signal.addEventListener('abort', onAbort, {once: true})
        waiter = {
          state: expectedState,
          resolve: (r) => {
            signal.removeEventListener('abort', onAbort)
            resolve(r)
          },
        }
      })
    },
    async close() {
      if (pending)
        page(pending, 503, 'Login interrupted', 'The terminal stopped waiting for this login.')
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
    },
  }
}
