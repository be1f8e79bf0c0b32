/**
 * What the remote login tells the person (or CI shell) running the proxy. The library only emits
 * events; the command renders them on stderr, as text (a spinner only on a TTY) or, with `--json`,
 * one JSON object per line: `{"type":"remote_auth","event":"<name>",…}`. Nothing here holds a
 * token; the authorization URL carries only public parameters (client_id, state, PKCE challenge).
 */
export type RemoteAuthEvent =
  | {event: 'discovered'; issuer: string; via: string}
  | {event: 'registered'; issuer: string; client_id: string}
  | {event: 'browser_opening'; url: string}
  | {event: 'login_url'; url: string; reason: 'skip_browser' | 'browser_failed'}
  | {event: 'waiting'; timeout_ms: number}
  | {
      event: 'device_code'
      verification_uri: string
      verification_uri_complete?: string
      user_code: string
      expires_in: number
    }
  | {event: 'callback_rejected'; reason: string}
  | {event: 'logged_in'; issuer: string; subject?: string}
  | {event: 'restored'; issuer: string}
  | {event: 'login_required'; reason: string}
  | {event: 'login_failed'; code: string; message: string}

export type ProgressSink = (e: RemoteAuthEvent) => void

export interface ProgressRendererOptions {
  write: (text: string) => void
  json?: boolean
  isTTY?: boolean
  now?: () => Date
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏']

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${(ms / 1000).toFixed(1)}s`
}

export function describe(e: RemoteAuthEvent): string {
  switch (e.event) {
    case 'discovered':
      return `Remote authorization server: ${e.issuer} (found via ${e.via.replace('_', ' ')})`
    case 'registered':
      return `Registered OAuth client ${e.client_id} at ${e.issuer}`
    case 'browser_opening':
      return `Opening browser… If it does not open, visit:\n  ${e.url}`
    case 'login_url':
      return e.reason === 'skip_browser'
        ? `Open this URL in a browser to log in:\n  ${e.url}`
        : `Could not open a browser. Open this URL to log in:\n  ${e.url}`
    case 'device_code':
      // RFC 8628 §3.3: show the short URI and the code; the complete URI saves typing the code.
      return e.verification_uri_complete
        ? `To log in, open ${e.verification_uri_complete}\n  (or open ${e.verification_uri} and enter the code ${e.user_code}); it expires in ${e.expires_in}s`
        : `To log in, open ${e.verification_uri} and enter the code ${e.user_code}; it expires in ${e.expires_in}s`
    case 'waiting':
      return `Waiting for login (${seconds(e.timeout_ms)})…`
    case 'callback_rejected':
      return `Ignored a login callback: ${e.reason}`
    case 'logged_in':
      return e.subject ? `Logged in as ${e.subject} (${e.issuer})` : `Logged in to ${e.issuer}`
    case 'restored':
      return `Using the saved login for ${e.issuer} (no browser needed)`
    case 'login_required':
      return `A new login is needed: ${e.reason}`
    case 'login_failed':
      return `Login failed: ${e.message}`
  }
}

/** Renders events for a person (stderr) or a CI shell (`json`). */
export function createProgressRenderer(
  options: ProgressRendererOptions,
): ProgressSink & {stop(): void} {
  const now = options.now ?? (() => new Date())
  let spinner: ReturnType<typeof setInterval> | undefined
  const stopSpinner = () => {
    if (spinner) {
      clearInterval(spinner)
      spinner = undefined
      options.write('\r\x1b[2K')
    }
  }
  const sink = (e: RemoteAuthEvent) => {
    if (options.json) {
      options.write(JSON.stringify({time: now().toISOString(), type: 'remote_auth', ...e}) + '\n')
      return
    }
    stopSpinner()
    const text = describe(e)
    if (e.event === 'waiting' && options.isTTY) {
      let i = 0
      const draw = () => options.write(`\r\x1b[2K${FRAMES[i++ % FRAMES.length]} ${text}`)
      draw()
      spinner = setInterval(draw, 120)
      spinner.unref()
      return
    }
    options.write(text + '\n')
  }
  return Object.assign(sink, {stop: stopSpinner})
}
